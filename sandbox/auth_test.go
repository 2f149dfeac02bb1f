package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/feedworker/feedworker/internal/syncbuf"
)

func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ClientID: "app", ClientSecret: "s3cr:t+/=", TokenLifetime: 90*time.Second + time.Millisecond})
	form := func(vals url.Values) string { return vals.Encode() }
	tests := []struct {
		name      string
		method    string
		path      string
		ctype     string
		body      string
		basicUser string // "" for none
		basicPass string
		want      int
		wantErr   string
	}{
		{"basic, escaped as RFC 6749 says", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials",
			url.QueryEscape("app"), url.QueryEscape("s3cr:t+/="), 200, ""},
		{"basic, raw as curl -u sends", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials&scope=all",
			"app", "s3cr:t+/=", 200, ""},
		{"form fields", "POST", tokenPath, "application/x-www-form-urlencoded",
			form(url.Values{"grant_type": {"client_credentials"}, "client_id": {"app"}, "client_secret": {"s3cr:t+/="}}), "", "", 200, ""},
		{"basic plus form client_id", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials&client_id=app",
			"app", "s3cr:t+/=", 200, ""},
		{"wrong secret", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials",
			"app", "nope", 401, "invalid_client"},
		{"wrong client", "POST", tokenPath, "application/x-www-form-urlencoded",
			form(url.Values{"grant_type": {"client_credentials"}, "client_id": {"other"}, "client_secret": {"s3cr:t+/="}}), "", "", 401, "invalid_client"},
		{"no credentials", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials", "", "", 401, "invalid_client"},
		{"two methods", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials&client_secret=s3cr%3At%2B%2F%3D",
			"app", "s3cr:t+/=", 400, "invalid_request"},
		{"password grant", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=password&username=u&password=p",
			"app", "s3cr:t+/=", 400, "unsupported_grant_type"},
		{"no grant", "POST", tokenPath, "application/x-www-form-urlencoded", "", "app", "s3cr:t+/=", 400, "invalid_request"},
		{"grant twice", "POST", tokenPath, "application/x-www-form-urlencoded", "grant_type=client_credentials&grant_type=client_credentials",
			"app", "s3cr:t+/=", 400, "invalid_request"},
		{"JSON body", "POST", tokenPath, "application/json", `{"grant_type":"client_credentials"}`, "app", "s3cr:t+/=", 400, "invalid_request"},
		{"query string", "POST", tokenPath + "?grant_type=client_credentials", "application/x-www-form-urlencoded", "",
			"app", "s3cr:t+/=", 400, "invalid_request"},
		{"GET", "GET", tokenPath, "", "", "app", "s3cr:t+/=", 405, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.basicUser != "" {
				req.SetBasicAuth(tt.basicUser, tt.basicPass)
			}
			res := f.send(req)
			if res.status != tt.want {
				t.Fatalf("status %d, want %d; body %s", res.status, tt.want, res.body)
			}
			if got := res.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", got)
			}
			if tt.want != 200 {
				var e struct {
					Error       string `json:"error"`
					Description string `json:"error_description"`
				}
				res.decode(t, &e)
				if e.Error != tt.wantErr || e.Description == "" {
					t.Errorf("error %+v, want %s with a description", e, tt.wantErr)
				}
				if strings.Contains(string(res.body), "s3cr") {
					t.Errorf("error body repeats the secret: %s", res.body)
				}
				return
			}
			var tok struct {
				AccessToken string `json:"access_token"`
				TokenType   string `json:"token_type"`
				ExpiresIn   int64  `json:"expires_in"`
			}
			res.decode(t, &tok)
			if tok.AccessToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn != 91 {
				t.Errorf("token answer %s: want a token, type Bearer, expires_in 91 (rounded up)", res.body)
			}
		})
	}
}

func TestBearer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{TokenLifetime: 2 * time.Second})
	good := f.token
	tests := []struct {
		name      string
		header    string
		path      string
		challenge string
	}{
		{"missing", "", "/v3/content", `Bearer realm="sandbox"`},
		{"missing on an unknown path", "", "/v3/nothing", `Bearer realm="sandbox"`},
		{"missing on a template", "", "/v3/story/template", `Bearer realm="sandbox"`},
		{"basic scheme", "Basic c2FuZGJveDpzYW5kYm94LXNlY3JldA==", "/v3/content", `Bearer realm="sandbox", error="invalid_request"`},
		{"empty bearer", "Bearer ", "/v3/content", `Bearer realm="sandbox", error="invalid_request"`},
		{"unknown token", "Bearer not-a-token", "/v3/content", `Bearer realm="sandbox", error="invalid_token", error_description="unknown token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tt.path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			res := f.send(req)
			if res.status != 401 {
				t.Fatalf("status %d, want 401", res.status)
			}
			res.apiErr(t)
			if got := res.header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
		})
	}
	// The scheme is case-insensitive (RFC 7235).
	req := httptest.NewRequest("GET", "/v3/content", nil)
	req.Header.Set("Authorization", "bearer "+good)
	if res := f.send(req); res.status != 200 {
		t.Errorf("lower-case scheme: status %d", res.status)
	}
	f.clock.Advance(1999 * time.Millisecond)
	f.must(200, "GET", "/v3/content", nil)
	f.clock.Advance(time.Millisecond)
	res := f.must(401, "GET", "/v3/content", nil)
	if e := res.apiErr(t); !strings.Contains(e.Error.Message, "expired") {
		t.Errorf("expired token message %q", e.Error.Message)
	}
	if got := res.header.Get("WWW-Authenticate"); !strings.Contains(got, `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate %q", got)
	}
	// A new token works again.
	f.token = f.newToken()
	f.must(200, "GET", "/v3/content", nil)
}

// TestOAuth2Library checks that golang.org/x/oauth2, which the acs client's
// transport is built on, gets tokens in both of its auth styles and renews
// an expired one.
func TestOAuth2Library(t *testing.T) {
	t.Parallel()
	srv, err := New(Options{ClientID: "app id", ClientSecret: "p@ss word&=", TokenLifetime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams, oauth2.AuthStyleAutoDetect} {
		cfg := clientcredentials.Config{ClientID: "app id", ClientSecret: "p@ss word&=", TokenURL: ts.URL + tokenPath, AuthStyle: style}
		ctx := context.WithValue(t.Context(), oauth2.HTTPClient, ts.Client())
		tok, err := cfg.Token(ctx)
		if err != nil {
			t.Fatalf("style %v: %v", style, err)
		}
		if tok.TokenType != "Bearer" || tok.Expiry.IsZero() {
			t.Errorf("style %v: token %+v", style, tok)
		}
		res, err := cfg.Client(ctx).Get(ts.URL + "/v3/content")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("style %v: GET /v3/content: %d", style, res.StatusCode)
		}
	}
	bad := clientcredentials.Config{ClientID: "app id", ClientSecret: "wrong", TokenURL: ts.URL + tokenPath, AuthStyle: oauth2.AuthStyleInHeader}
	_, err = bad.Token(context.WithValue(t.Context(), oauth2.HTTPClient, ts.Client()))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
		t.Errorf("wrong secret: %v, want a RetrieveError invalid_client", err)
	}
}

// TestTokenNotLogged runs requests with a debug logger and looks for the
// token and the secret in the log.
func TestTokenNotLogged(t *testing.T) {
	t.Parallel()
	var buf syncbuf.Buffer
	f := newFixture(t, Options{ClientSecret: "very-secret-value", Logger: newJSONLogger(&buf)})
	f.seed()
	f.must(200, "GET", "/v3/content", nil)
	req := httptest.NewRequest("GET", "/v3/content", nil)
	req.Header.Set("Authorization", "Bearer "+f.token+"x")
	if res := f.send(req); res.status != 401 {
		t.Errorf("wrong token: status %d", res.status)
	}
	logged := buf.String()
	if !strings.Contains(logged, `"path":"/v3/content"`) {
		t.Fatalf("requests not logged: %s", logged)
	}
	for _, secret := range []string{f.token, "very-secret-value"} {
		if strings.Contains(logged, secret) {
			t.Errorf("log contains a secret %q", secret)
		}
	}
	// Every line is JSON with a message.
	for _, line := range strings.Split(strings.TrimSpace(logged), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil {
			t.Errorf("log line %q", line)
		}
	}
}
