package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// tokenPath is the OAuth 2.0 token endpoint of the wire conventions.
const tokenPath = "/oauth/token"

// serveToken implements the client credentials grant (RFC 6749 section 4.4).
// Its errors have the RFC's shape {"error","error_description"}, which OAuth
// libraries such as golang.org/x/oauth2 read, rather than the API's.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "the token endpoint takes POST")
		return
	}
	if r.URL.RawQuery != "" {
		// Credentials in a query string end up in access logs.
		oauthError(w, http.StatusBadRequest, "invalid_request", "parameters go in the form body, not the query string")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
		return
	}
	body, aerr := readBody(r)
	if aerr != nil {
		oauthError(w, aerr.Status, "invalid_request", aerr.Message)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the form body does not parse")
		return
	}
	for k, v := range form {
		if len(v) > 1 {
			oauthError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("parameter %s is given more than once", k))
			return
		}
	}
	switch g := form.Get("grant_type"); g {
	case "client_credentials":
	case "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only grant_type client_credentials is supported")
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Has("client_secret") || (form.Has("client_id") && form.Get("client_id") != id && form.Get("client_id") != unescape(id)) {
			oauthError(w, http.StatusBadRequest, "invalid_request", "the client must authenticate by one method: HTTP Basic or form fields")
			return
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if !s.clientMatches(id, secret, basic) {
		s.log.Info("sandbox token refused", "client_id", id)
		w.Header().Set("WWW-Authenticate", `Basic realm="sandbox"`)
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	token := rand.Text()
	now := s.now()
	expires := now.Add(s.opts.TokenLifetime)
	s.mu.Lock()
	for h, exp := range s.st.tokens {
		if !now.Before(exp) {
			delete(s.st.tokens, h)
		}
	}
	s.st.tokens[tokenDigest(token)] = expires
	s.st.tokensDirty = true
	err = s.entryLocked()
	s.mu.Unlock()
	if err == nil {
		err = s.syncWrites()
	}
	if err != nil {
		// The token works until this process stops; only a restart loses it.
		s.log.Error("sandbox: save token digest", "err", err)
	}
	s.log.Debug("sandbox token issued", "client_id", id, "expires", expires)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": token,
		"token_type":   "Bearer",
		// Rounded up: 0 would tell clients the token never expires.
		"expires_in": int64(math.Ceil(s.opts.TokenLifetime.Seconds())),
	})
}

// clientMatches compares in constant time. RFC 6749 section 2.3.1 has
// clients form-encode the id and secret before HTTP Basic; curl -u does not,
// so both spellings are accepted.
func (s *Server) clientMatches(id, secret string, basic bool) bool {
	eq := func(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	if eq(id, s.opts.ClientID) && eq(secret, s.opts.ClientSecret) {
		return true
	}
	return basic && eq(unescape(id), s.opts.ClientID) && eq(unescape(secret), s.opts.ClientSecret)
}

func unescape(s string) string {
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return u
}

func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func oauthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// authorize checks the bearer token of a /v3 request (RFC 6750). On failure
// it returns the 401 and the WWW-Authenticate challenge to send with it.
func (s *Server) authorize(r *http.Request) (*apiError, string) {
	const realm = `Bearer realm="sandbox"`
	h := r.Header.Get("Authorization")
	if h == "" {
		return &apiError{Status: http.StatusUnauthorized, Message: "missing Authorization: Bearer token; get one from POST " + tokenPath}, realm
	}
	scheme, token, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return &apiError{Status: http.StatusUnauthorized, Message: "Authorization must be Bearer <access token>"},
			realm + `, error="invalid_request"`
	}
	digest := tokenDigest(strings.TrimSpace(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.st.tokens[digest]
	if !ok {
		return &apiError{Status: http.StatusUnauthorized, Message: "unknown access token"},
			realm + `, error="invalid_token", error_description="unknown token"`
	}
	if !s.now().Before(exp) {
		delete(s.st.tokens, digest)
		return &apiError{Status: http.StatusUnauthorized, Message: "access token expired"},
			realm + `, error="invalid_token", error_description="token expired"`
	}
	return nil, ""
}
