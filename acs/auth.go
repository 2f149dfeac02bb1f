package acs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// DefaultTokenPath is where the service's token endpoint is taken to live,
// relative to the base URL. The spec does not show the token endpoint
// ({auth_url}); this is the wire convention the sandbox implements.
const DefaultTokenPath = "/oauth/token"

// TokenURL returns baseURL + [DefaultTokenPath].
func TokenURL(baseURL string) string {
	return strings.TrimSuffix(baseURL, "/") + DefaultTokenPath
}

// ClientCredentials obtains access tokens with the OAuth 2.0 client
// credentials grant (golang.org/x/oauth2/clientcredentials). Its transport
// reuses a token until it expires, and when a request made with a reused
// token is answered 401 or 403, fetches a new token and sends the request
// once more (some servers answer 403 to a token they no longer accept; the
// spec does not say which). Formatting a ClientCredentials with fmt never
// shows the secret.
type ClientCredentials struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
	// AuthStyle says how the credentials reach the token endpoint; the
	// zero value tries HTTP Basic, then form fields, and remembers which
	// worked.
	AuthStyle oauth2.AuthStyle
}

// String describes the credentials without the secret.
func (cc ClientCredentials) String() string {
	return fmt.Sprintf("acs.ClientCredentials{TokenURL: %q, ClientID: %q, ClientSecret: redacted, Scopes: %q}", cc.TokenURL, cc.ClientID, cc.Scopes)
}

// GoString is String, so %#v does not print the secret either.
func (cc ClientCredentials) GoString() string { return cc.String() }

// Transport returns a RoundTripper that authenticates every request with a
// token from the token endpoint, but for a redirect to another domain (a
// subdomain of the API's host keeps it) or from https to http, which goes
// without it. base (nil: http.DefaultTransport) carries both the token
// requests and the API requests; wrap the result in further transports
// (instrumentation) as needed.
func (cc ClientCredentials) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	conf := &clientcredentials.Config{
		ClientID:     cc.ClientID,
		ClientSecret: cc.ClientSecret,
		TokenURL:     cc.TokenURL,
		Scopes:       append([]string(nil), cc.Scopes...),
		AuthStyle:    cc.AuthStyle,
	}
	tokenClient := &http.Client{Transport: base}
	return &tokenTransport{
		base: base,
		sem:  make(chan struct{}, 1),
		fetch: func(ctx context.Context) (*oauth2.Token, error) {
			if conf.TokenURL == "" {
				return nil, &tokenError{err: errors.New("empty token url")}
			}
			// The fetch runs under the context of the request that needed
			// the token, through base rather than http.DefaultClient.
			tok, err := conf.Token(context.WithValue(ctx, oauth2.HTTPClient, tokenClient))
			if err != nil {
				return nil, newTokenError(err)
			}
			return tok, nil
		},
	}
}

// HTTPClient returns an http.Client using [ClientCredentials.Transport].
func (cc ClientCredentials) HTTPClient(base http.RoundTripper) *http.Client {
	return &http.Client{Transport: cc.Transport(base)}
}

// StaticToken is a bearer token obtained elsewhere. It is sent as is and
// never refreshed. Formatting it with fmt never shows it.
type StaticToken string

// String hides the token.
func (StaticToken) String() string { return "acs.StaticToken(redacted)" }

// GoString hides the token.
func (StaticToken) GoString() string { return "acs.StaticToken(redacted)" }

// Transport returns a RoundTripper that sends the token on every request
// through base (nil: http.DefaultTransport), but for a redirect to another
// domain (a subdomain of the API's host keeps it) or from https to http,
// which goes without it.
func (t StaticToken) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &staticTransport{base: base, auth: "Bearer " + string(t)}
}

// HTTPClient returns an http.Client using [StaticToken.Transport].
func (t StaticToken) HTTPClient(base http.RoundTripper) *http.Client {
	return &http.Client{Transport: t.Transport(base)}
}

type staticTransport struct {
	base http.RoundTripper
	auth string // the Authorization header's value
}

// RoundTrip sends a copy of req carrying the token, unless req follows a
// redirect elsewhere (see sendsToken).
func (t *staticTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sendsToken(req) {
		return t.base.RoundTrip(req)
	}
	return t.base.RoundTrip(withAuth(req, req.Body, t.auth))
}

// sendsToken reports whether req may carry the token. A request that
// follows redirects (http.Client sets Response on those) carries it only
// if every request of the chain went to the first one's host or one of
// its subdomains, as http.Client decides for a caller's own Authorization
// header, and never over http after https. A transport adds the token to
// every request it is handed: without this, it would give it to any
// server the API (or whoever answers in its name) redirects to. A chain
// whose first request is unknown (a transport below that sets no
// Response.Request) gets no token.
func sendsToken(req *http.Request) bool {
	if req.Response == nil {
		return true
	}
	first := req
	for first.Response != nil {
		if first.Response.Request == nil {
			return false
		}
		first = first.Response.Request
	}
	for r := req; r != first; r = r.Response.Request {
		if !sameAuthority(first.URL, r.URL) {
			return false
		}
	}
	return true
}

// sameAuthority reports whether to may carry what was sent to from: its
// host is from's or a subdomain of it, and it is not http after https.
// Hosts are compared in their ASCII (punycode) form, the one dialled, as
// http.Client compares them (but ignoring ASCII case, as DNS does):
// lowercasing "İ" would make another domain look like the API's. A host
// that has none fails, and a subdomain match is refused for an IPv6
// literal or zone (":" or "%", CVE-2023-45289).
func sameAuthority(from, to *url.URL) bool {
	if strings.EqualFold(from.Scheme, "https") && !strings.EqualFold(to.Scheme, "https") {
		return false
	}
	fh, err := asciiHost(from)
	if err != nil {
		return false
	}
	th, err := asciiHost(to)
	if err != nil {
		return false
	}
	if th == fh {
		return true
	}
	return !strings.ContainsAny(th, ":%") && strings.HasSuffix(th, "."+fh)
}

// asciiHost is u's host name in lower case, in its punycode form when it
// is not ASCII (an IP literal is ASCII, and left as it is).
func asciiHost(u *url.URL) (string, error) {
	h := u.Hostname()
	for i := 0; i < len(h); i++ {
		if h[i] >= utf8.RuneSelf {
			return idna.Lookup.ToASCII(h)
		}
	}
	return strings.ToLower(h), nil
}

// tokenTransport caches one token, shares it between concurrent requests
// and, unlike oauth2.Transport, can drop it when the server refuses it.
type tokenTransport struct {
	base  http.RoundTripper
	fetch func(context.Context) (*oauth2.Token, error)

	// sem lets one goroutine fetch at a time; a channel rather than a
	// mutex so that waiting for it honours the request's context.
	sem chan struct{}

	mu  sync.Mutex
	tok *oauth2.Token
	// auth is the Authorization header's value for tok, as
	// tok.SetAuthHeader writes it, made once per token rather than per
	// request.
	auth string
}

func (t *tokenTransport) cached() (*oauth2.Token, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok.Valid() { // Valid treats a token expiring within 10s as expired
		return t.tok, t.auth
	}
	return nil, ""
}

// token returns a valid token and its Authorization header value; fresh
// is true when this call fetched it.
func (t *tokenTransport) token(ctx context.Context) (tok *oauth2.Token, auth string, fresh bool, err error) {
	if tok, auth := t.cached(); tok != nil {
		return tok, auth, false, nil
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, "", false, ctx.Err()
	}
	defer func() { <-t.sem }()
	if tok, auth := t.cached(); tok != nil { // fetched while we waited
		return tok, auth, false, nil
	}
	tok, err = t.fetch(ctx)
	if err != nil {
		return nil, "", false, err
	}
	auth = tok.Type() + " " + tok.AccessToken
	t.mu.Lock()
	t.tok, t.auth = tok, auth
	t.mu.Unlock()
	return tok, auth, true, nil
}

// invalidate drops old unless another request has already replaced it.
func (t *tokenTransport) invalidate(old *oauth2.Token) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok == old {
		t.tok, t.auth = nil, ""
	}
}

// RoundTrip sends req with the cached token, refreshing it once on a 401
// or 403 to a request sent with a reused token.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sendsToken(req) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	tok, auth, fresh, err := t.token(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(withAuth(req, req.Body, auth))
	if err != nil || !refusesToken(resp.StatusCode) || fresh {
		// A refusal of a token fetched for this very request is the
		// server's answer, not staleness: refreshing again would loop.
		// A 403 to it stands as a real permission refusal.
		return resp, err
	}
	body := req.Body
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return resp, nil // cannot replay the body; the 401 stands
		}
		if body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxErrorBody)
	resp.Body.Close()

	t.invalidate(tok)
	_, auth, _, err = t.token(ctx)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	return t.base.RoundTrip(withAuth(req, body, auth))
}

// refusesToken reports whether status may mean that the server no longer
// accepts a reused token. The spec does not say how an expired or revoked
// token is answered: 401 is the OAuth answer, and some servers send 403.
// A 403 that is a real permission refusal costs one token fetch and one
// repeat of the request, and then stands.
func refusesToken(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// withAuth returns a copy of req with body and the Authorization header
// value auth; req itself is left as it is (a RoundTripper must not modify
// it). The copy is shallow but for the header map and its Authorization
// slice: the other values are shared with req, and nothing below changes
// them in place; req.Clone's deep copy was most of what the transport
// cost a request. The Authorization slice is the request's own, so a
// caller that redacts it in the Response's Request changes no other
// request.
func withAuth(req *http.Request, body io.ReadCloser, auth string) *http.Request {
	r := new(http.Request)
	*r = *req
	r.Body = body
	h := make(http.Header, len(req.Header)+1)
	for k, v := range req.Header {
		h[k] = v
	}
	h["Authorization"] = []string{auth}
	r.Header = h
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// tokenError is a failed token fetch. It never holds the token endpoint's
// response body, which oauth2.RetrieveError would print.
type tokenError struct {
	status int    // the token endpoint's status; 0 when it did not answer
	code   string // the OAuth error code, such as invalid_client
	desc   string
	err    error // the transport failure, when status is 0
}

func newTokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := &tokenError{code: re.ErrorCode, desc: re.ErrorDescription}
		if re.Response != nil {
			te.status = re.Response.StatusCode
		}
		return te
	}
	return &tokenError{err: err}
}

func (e *tokenError) Error() string {
	if e.status == 0 {
		if e.err == nil {
			return "acs: fetch token: failed"
		}
		return "acs: fetch token: " + e.err.Error()
	}
	msg := fmt.Sprintf("acs: fetch token: status %d", e.status)
	if e.code != "" {
		msg += ": " + e.code
	}
	if e.desc != "" {
		msg += ": " + e.desc
	}
	return msg
}

func (e *tokenError) Unwrap() error { return e.err }

// Is matches ErrUnauthorized when the token endpoint refused the request:
// with client credentials that means the credentials are wrong.
func (e *tokenError) Is(target error) bool {
	return target == ErrUnauthorized && e.status >= 400 && e.status < 500
}
