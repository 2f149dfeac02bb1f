package acs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"
)

const (
	testClientID     = "worker"
	testClientSecret = "s3cr3t-VALUE"
)

// authServer is one httptest server with a token endpoint and an API that
// accepts only the tokens it considers current.
type authServer struct {
	srv       *httptest.Server
	expiresIn int

	fetches atomic.Int32
	mu      sync.Mutex
	valid   map[string]bool
	apiReqs []seen
	// tokenStatus, when not 200, makes the token endpoint fail.
	tokenStatus int
	tokenBody   string
	// rejectAll makes the API refuse every token.
	rejectAll bool
	// refuseWith is the status of a refused token: 401 unless set (some
	// servers answer 403).
	refuseWith int
	// failFirst makes the first token fetches answer 503.
	failFirst int32
}

func newAuthServer(t *testing.T, expiresIn int) *authServer {
	t.Helper()
	a := &authServer{expiresIn: expiresIn, valid: map[string]bool{}, tokenStatus: http.StatusOK}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve(t)))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *authServer) serve(t *testing.T) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == DefaultTokenPath {
			n := a.fetches.Add(1)
			id, secret, ok := r.BasicAuth()
			if r.Method != http.MethodPost || !ok || id != testClientID || secret != testClientSecret {
				t.Errorf("token request: %s, basic auth %q/%q/%v", r.Method, id, secret, ok)
			}
			if err := r.ParseForm(); err != nil {
				t.Errorf("token form: %v", err)
			}
			if got := r.PostForm.Get("grant_type"); got != "client_credentials" {
				t.Errorf("grant_type = %q", got)
			}
			if got := r.PostForm.Get("scope"); got != "content audience" {
				t.Errorf("scope = %q, want %q", got, "content audience")
			}
			a.mu.Lock()
			status, body := a.tokenStatus, a.tokenBody
			if n <= a.failFirst {
				status, body = http.StatusServiceUnavailable, `{"error":"temporarily_unavailable"}`
			}
			a.mu.Unlock()
			if status != http.StatusOK {
				reply(w, status, body)
				return
			}
			tok := fmt.Sprintf("tok-%d", n)
			a.mu.Lock()
			a.valid[tok] = true
			a.mu.Unlock()
			reply(w, 200, fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer","expires_in":%d}`, tok, a.expiresIn))
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		a.mu.Lock()
		a.apiReqs = append(a.apiReqs, seen{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body)})
		ok := a.valid[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] && !a.rejectAll
		refuse := cmp.Or(a.refuseWith, http.StatusUnauthorized)
		a.mu.Unlock()
		if !ok {
			reply(w, refuse, fmt.Sprintf(`{"error":{"status":%d,"message":"invalid token"}}`, refuse))
			return
		}
		reply(w, 200, `{"data":{"id":1}}`)
	}
}

func (a *authServer) revokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.valid)
}

func (a *authServer) api() []seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]seen(nil), a.apiReqs...)
}

func (a *authServer) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	creds := ClientCredentials{
		TokenURL:     TokenURL(a.srv.URL),
		ClientID:     testClientID,
		ClientSecret: testClientSecret,
		Scopes:       []string{"content", "audience"},
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
	opts = append([]Option{WithRetryPolicy(fastRetry())}, opts...)
	c, err := NewClient(a.srv.URL, creds.HTTPClient(a.srv.Client().Transport), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTokenFetchAndReuse(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	c := a.client(t)
	ctx := context.Background()
	for range 3 {
		if _, _, err := c.Categories.Get(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.fetches.Load(); n != 1 {
		t.Errorf("token fetched %d times, want 1", n)
	}
	for i, r := range a.api() {
		if got := r.Header.Get("Authorization"); got != "Bearer tok-1" {
			t.Errorf("request %d Authorization = %q, want Bearer tok-1", i, got)
		}
	}
}

// TestTokenConcurrentReuse: concurrent first requests share one fetch.
func TestTokenConcurrentReuse(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	c := a.client(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := c.Categories.Get(context.Background(), 1); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := a.fetches.Load(); n != 1 {
		t.Errorf("token fetched %d times, want 1", n)
	}
}

// TestTokenExpiry: an expired token is not reused. oauth2 counts a token
// expiring within 10s as expired, so expires_in 1 expires at once.
func TestTokenExpiry(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 1)
	c := a.client(t)
	for range 2 {
		if _, _, err := c.Categories.Get(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.fetches.Load(); n != 2 {
		t.Errorf("token fetched %d times, want 2", n)
	}
}

// TestTokenRefreshOn401: a 401 on a cached token refreshes it once and
// replays the request, body included.
func TestTokenRefreshOn401(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	c := a.client(t)
	ctx := context.Background()
	if _, _, err := c.Categories.Get(ctx, 1); err != nil {
		t.Fatal(err)
	}
	a.revokeAll() // the server forgets tok-1 before it expires
	if _, _, err := c.Categories.Create(ctx, &CategoryCreate{Description: "News"}); err != nil {
		t.Fatalf("create after revocation: %v", err)
	}
	if n := a.fetches.Load(); n != 2 {
		t.Errorf("token fetched %d times, want 2", n)
	}
	reqs := a.api()
	if len(reqs) != 3 {
		t.Fatalf("API saw %d requests, want 3", len(reqs))
	}
	first, replay := reqs[1], reqs[2]
	if first.Header.Get("Authorization") != "Bearer tok-1" || replay.Header.Get("Authorization") != "Bearer tok-2" {
		t.Errorf("tokens = %q then %q, want tok-1 then tok-2", first.Header.Get("Authorization"), replay.Header.Get("Authorization"))
	}
	want := env(`{"description":"News"}`)
	if first.Body != want || replay.Body != want {
		t.Errorf("bodies = %q then %q, want %q twice", first.Body, replay.Body, want)
	}
}

// TestToken401OnFreshToken: a 401 with a token fetched for the request is
// final; and a cached token is refreshed once only, never in a loop.
func TestToken401OnFreshToken(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	c := a.client(t)
	ctx := context.Background()
	a.mu.Lock()
	a.rejectAll = true
	a.mu.Unlock()

	_, _, err := c.Categories.Get(ctx, 1)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if n, api := a.fetches.Load(), len(a.api()); n != 1 || api != 1 {
		t.Errorf("fresh token: %d fetches, %d API requests; want 1 and 1", n, api)
	}
	_, _, err = c.Categories.Get(ctx, 1)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if n, api := a.fetches.Load(), len(a.api()); n != 2 || api != 3 {
		t.Errorf("cached token: %d fetches, %d API requests; want 2 and 3", n, api)
	}
}

// TestTokenRefreshOn403: a server that answers 403 to a token it no
// longer accepts is treated like one that answers 401: a 403 on a cached
// token refreshes it once and replays the request; a 403 on a fresh token
// stands, and a cached one is refreshed once only.
func TestTokenRefreshOn403(t *testing.T) {
	t.Parallel()
	t.Run("expired cached token", func(t *testing.T) {
		t.Parallel()
		a := newAuthServer(t, 3600)
		a.refuseWith = http.StatusForbidden
		c := a.client(t)
		ctx := context.Background()
		if _, _, err := c.Categories.Get(ctx, 1); err != nil {
			t.Fatal(err)
		}
		a.revokeAll()
		if _, _, err := c.Categories.Create(ctx, &CategoryCreate{Description: "News"}); err != nil {
			t.Fatalf("create after the server dropped the token: %v", err)
		}
		reqs := a.api()
		if n := a.fetches.Load(); n != 2 || len(reqs) != 3 {
			t.Fatalf("%d token fetches, %d API requests; want 2 and 3", n, len(reqs))
		}
		if reqs[2].Header.Get("Authorization") != "Bearer tok-2" || reqs[2].Body != env(`{"description":"News"}`) {
			t.Errorf("replay = %q with %q; want tok-2 and the body", reqs[2].Header.Get("Authorization"), reqs[2].Body)
		}
	})
	t.Run("real refusal", func(t *testing.T) {
		t.Parallel()
		a := newAuthServer(t, 3600)
		a.refuseWith, a.rejectAll = http.StatusForbidden, true
		c := a.client(t)
		ctx := context.Background()
		if _, _, err := c.Categories.Get(ctx, 1); !errors.Is(err, ErrForbidden) {
			t.Fatalf("err = %v, want ErrForbidden", err)
		}
		if n, api := a.fetches.Load(), len(a.api()); n != 1 || api != 1 {
			t.Errorf("fresh token: %d fetches, %d API requests; want 1 and 1", n, api)
		}
		if _, _, err := c.Categories.Get(ctx, 1); !errors.Is(err, ErrForbidden) {
			t.Fatalf("err = %v, want ErrForbidden", err)
		}
		if n, api := a.fetches.Load(), len(a.api()); n != 2 || api != 3 {
			t.Errorf("cached token: %d fetches, %d API requests; want 2 and 3", n, api)
		}
	})
}

// TestTokenEndpointRefuses: bad credentials are ErrUnauthorized, are not
// retried, and the error shows neither the secret nor the endpoint's body.
func TestTokenEndpointRefuses(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	a.mu.Lock()
	a.tokenStatus = http.StatusUnauthorized
	a.tokenBody = `{"error":"invalid_client","error_description":"bad secret","echo":"` + testClientSecret + `"}`
	a.mu.Unlock()
	c := a.client(t)
	_, _, err := c.Categories.Get(context.Background(), 1)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("err = %q, want it to name the OAuth error", err)
	}
	if strings.Contains(err.Error(), testClientSecret) || strings.Contains(err.Error(), "echo") {
		t.Errorf("err = %q leaks the token endpoint's body", err)
	}
	if n := a.fetches.Load(); n != 1 {
		t.Errorf("token fetched %d times, want 1 (no retry on refused credentials)", n)
	}
	if len(a.api()) != 0 {
		t.Errorf("API saw a request without a token")
	}
}

// TestSecretsNeverShown: tokens and secrets stay out of errors, hook
// reports and formatted values.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reports []string
	hook := func(_ context.Context, info RequestInfo) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, fmt.Sprintf("%+v %#v", info, info))
	}
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 0:
			reply(w, 401, `{"error":"unauthorized"}`)
		case 1:
			reply(w, 403, `<html>forbidden</html>`)
		default:
			// Cut the connection mid-answer: a transport error.
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
		}
	})
	c := newTestClient(t, rec, WithHook(hook), WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	var errs []error
	for range 3 {
		_, _, err := c.Content.Get(context.Background(), 1)
		errs = append(errs, err)
	}
	cc := ClientCredentials{TokenURL: "http://x", ClientID: "id", ClientSecret: testClientSecret}
	shown := []string{
		fmt.Sprint(StaticToken(testToken)), fmt.Sprintf("%#v", StaticToken(testToken)), fmt.Sprintf("%+v", StaticToken(testToken)),
		fmt.Sprint(cc), fmt.Sprintf("%#v", cc), fmt.Sprintf("%+v", cc), fmt.Sprintf("%v", &cc),
	}
	for _, err := range errs {
		if err == nil {
			t.Fatal("want an error from every request")
		}
		shown = append(shown, err.Error(), fmt.Sprintf("%+v", err))
	}
	mu.Lock()
	shown = append(shown, reports...)
	mu.Unlock()
	for _, s := range shown {
		if strings.Contains(s, testToken) || strings.Contains(s, testClientSecret) {
			t.Errorf("secret shown in %q", s)
		}
	}
}

// TestStaticToken: the header is set on a copy; the caller's request is
// untouched.
func TestStaticToken(t *testing.T) {
	t.Parallel()
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := StaticToken("abc").Transport(nil).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "Bearer abc" {
		t.Errorf("Authorization = %q, want Bearer abc", got)
	}
	if req.Header.Get("Authorization") != "" {
		t.Error("the caller's request was modified")
	}
}

// TestPostRetriedWhenTokenFetchFails: without a token nothing was sent, so
// even a POST is retried.
func TestPostRetriedWhenTokenFetchFails(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	a.mu.Lock()
	a.failFirst = 1
	a.mu.Unlock()
	c := a.client(t)
	if _, _, err := c.Categories.Create(context.Background(), &CategoryCreate{Description: "News"}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if n, api := a.fetches.Load(), len(a.api()); n != 2 || api != 1 {
		t.Errorf("%d token fetches, %d API requests; want 2 and 1", n, api)
	}
}

// TestToken401BodyNotReplayable: without GetBody the request cannot be sent
// again, so the 401 is handed back rather than a request without its body.
func TestToken401BodyNotReplayable(t *testing.T) {
	t.Parallel()
	a := newAuthServer(t, 3600)
	creds := ClientCredentials{TokenURL: TokenURL(a.srv.URL), ClientID: testClientID, ClientSecret: testClientSecret,
		Scopes: []string{"content", "audience"}, AuthStyle: oauth2.AuthStyleInHeader}
	hc := creds.HTTPClient(nil)
	get, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/v3/category/1", nil)
	resp, err := hc.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	a.revokeAll()
	post, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/v3/category", io.NopCloser(strings.NewReader(`{}`)))
	resp, err = hc.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status = %d, want the 401", resp.StatusCode)
	}
	if n, api := a.fetches.Load(), len(a.api()); n != 1 || api != 2 {
		t.Errorf("%d token fetches, %d API requests; want 1 and 2", n, api)
	}
}

// roundTripFunc is a RoundTripper that answers with a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAuthHeaderIsTheRequests: the Authorization value a request carries
// is its own, so a caller that redacts it in the answer's Request (before
// logging it, say) changes what no other request sends.
func TestAuthHeaderIsTheRequests(t *testing.T) {
	var got []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Get("Authorization"))
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	hc := StaticToken("secret").HTTPClient(base)
	for i := range 2 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.test/v3/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i == 0 {
			resp.Request.Header["Authorization"][0] = "REDACTED"
		}
	}
	if len(got) != 2 || got[0] != "Bearer secret" || got[1] != "Bearer secret" {
		t.Fatalf("Authorization sent = %q; want Bearer secret twice", got)
	}
}

// TestTokenNotSentOnRedirectElsewhere: through http.Client, a redirect to
// another host goes without the token, for both kinds of credentials; one
// to the same host keeps it. The API is api.test and the other host
// other.test, both dialled on loopback.
func TestTokenNotSentOnRedirectElsewhere(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	elsewhere := map[string]string{} // path -> Authorization seen
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere[r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		reply(w, 200, `{"data":{"id":1}}`)
	}))
	defer other.Close()
	a := newAuthServer(t, 3600)
	const static = "static-token"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case DefaultTokenPath:
			a.srv.Config.Handler.ServeHTTP(w, r)
		case "/v3/category/1":
			http.Redirect(w, r, "http://other.test/away/"+r.URL.Query().Get("k"), http.StatusFound)
		case "/v3/category/2":
			http.Redirect(w, r, "http://API.test/v3/category/3", http.StatusFound)
		default:
			if got := r.Header.Get("Authorization"); got != "Bearer "+static && !strings.HasPrefix(got, "Bearer tok-") {
				t.Errorf("%s on the API's own host: Authorization = %q", r.URL.Path, got)
			}
			reply(w, 200, `{"data":{"id":1}}`)
		}
	}))
	defer api.Close()
	addrs := map[string]string{"api.test:80": api.Listener.Addr().String(), "other.test:80": other.Listener.Addr().String()}
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addrs[strings.ToLower(addr)])
	}}
	defer base.CloseIdleConnections()

	creds := ClientCredentials{TokenURL: "http://api.test" + DefaultTokenPath, ClientID: testClientID, ClientSecret: testClientSecret,
		Scopes: []string{"content", "audience"}, AuthStyle: oauth2.AuthStyleInHeader}
	for name, hc := range map[string]*http.Client{
		"credentials": creds.HTTPClient(base),
		"static":      StaticToken(static).HTTPClient(base),
	} {
		for _, path := range []string{"/v3/category/1?k=" + name, "/v3/category/2"} {
			resp, err := hc.Get("http://api.test" + path)
			if err != nil {
				t.Fatalf("%s %s: %v", name, path, err)
			}
			resp.Body.Close()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"credentials", "static"} {
		got, ok := elsewhere["/away/"+name]
		if !ok {
			t.Errorf("%s: the redirect to another host was not followed", name)
		} else if got != "" {
			t.Errorf("%s: the other host got Authorization %q", name, got)
		}
	}
}

// TestSendsToken: the rule over redirect chains.
func TestSendsToken(t *testing.T) {
	t.Parallel()
	chain := func(urls ...string) *http.Request {
		var req *http.Request
		for _, u := range urls {
			r, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			if req != nil {
				r.Response = &http.Response{Request: req}
			}
			req = r
		}
		return req
	}
	for _, tt := range []struct {
		urls []string
		want bool
	}{
		{[]string{"https://api.example/v3/x"}, true},
		{[]string{"https://api.example/v3/x", "https://API.example:443/y"}, true},
		{[]string{"https://api.example/v3/x", "https://api.example:8443/y"}, true}, // ports, as http.Client
		{[]string{"https://api.example/v3/x", "https://cdn.api.example/y"}, true},  // a subdomain, as http.Client
		{[]string{"http://api.example/v3/x", "https://api.example/y"}, true},
		{[]string{"https://api.example/v3/x", "http://api.example/y"}, false}, // in clear after https
		{[]string{"https://api.example/v3/x", "https://evil.example/y"}, false},
		{[]string{"https://api.example/v3/x", "https://evilapi.example/y"}, false},
		{[]string{"https://api.example/v3/x", "https://example/y"}, false}, // the parent domain
		{[]string{"https://api.example/v3/x", "https://evil.example/y", "https://api.example/z"}, false},
		// Another domain that lowercases to the API's: compared as dialled.
		{[]string{"https://api.acme-media.com/", "https://api.acme-med\u0130a.com/x"}, false},
		{[]string{"https://API.acme-media.com/", "https://api.acme-media.com/x"}, true},
		// An IPv6 zone that ends as a subdomain would.
		{[]string{"http://api.example.com/", "http://[2001:db8::1%25.api.example.com]/x"}, false},
		{[]string{"http://[2001:db8::1]/", "http://[2001:db8::1]:8080/x"}, true},
	} {
		if got := sendsToken(chain(tt.urls...)); got != tt.want {
			t.Errorf("%v: sendsToken = %v, want %v", tt.urls, got, tt.want)
		}
	}
	// A redirect whose first request is unknown gets no token.
	r := chain("https://api.example/v3/x")
	r.Response = &http.Response{}
	if sendsToken(r) {
		t.Error("a redirect without its previous request carries the token")
	}
}
