package worker

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The console's actions (poll now, retry a dead letter) need admin.token:
// sent as "Authorization: Bearer TOKEN" by a script, or typed once into
// the console's sign-in form, which sets a signed session cookie; a form
// sent with the cookie must carry the CSRF token the page put in it, and
// come from the same origin (http.CrossOriginProtection). The cookie and
// the CSRF token are HMACs under a key made at start: nothing is stored,
// and a restart signs everyone out.
const (
	sessionCookie = "feedworker_session"
	sessionTTL    = 12 * time.Hour
)

// consoleState is the console's signing key and action counter.
type consoleState struct {
	key     []byte
	actions *prometheus.CounterVec
}

func newConsoleState(reg prometheus.Registerer) *consoleState {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	c := &consoleState{
		key: key,
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_console_actions_total",
			Help: "Console actions (poll_now, retry, sign_in, sign_out) by result: ok, refused (no or wrong token, read-only console), failed.",
		}, []string{"action", "result"}),
	}
	for _, a := range []string{"poll_now", "retry", "sign_in", "sign_out"} {
		for _, r := range []string{"ok", "refused", "failed"} {
			c.actions.WithLabelValues(a, r)
		}
	}
	reg.MustRegister(c.actions)
	return c
}

func (c *consoleState) mac(parts ...string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(strings.Join(parts, "|")))
	return hex.EncodeToString(m.Sum(nil))
}

// tokenTag binds sessions to the token they were opened with.
func tokenTag(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:8])
}

func (c *consoleState) newSession(token string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(sessionTTL).Unix(), 10)
	return exp + "." + c.mac("session", exp, tokenTag(token))
}

// session returns the request's valid session cookie value, or "".
func (c *consoleState) session(r *http.Request, token string, now time.Time) string {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	exp, sig, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return ""
	}
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || now.Unix() > n {
		return ""
	}
	if !hmac.Equal([]byte(sig), []byte(c.mac("session", exp, tokenTag(token)))) {
		return ""
	}
	return ck.Value
}

// csrf is the token a session's forms carry.
func (c *consoleState) csrf(session string) string {
	if session == "" {
		return ""
	}
	return c.mac("csrf", session)
}

var (
	errReadOnly = errors.New("the console is read-only: set admin.token in the config to allow actions")
	errNoAuth   = errors.New("not allowed: send the admin token as a bearer token, or sign in on the console")
	errBadToken = errors.New("not allowed: wrong admin token")
	errBadCSRF  = errors.New("not allowed: the form's CSRF token is missing or stale; reload the page")
)

// authorize says who may act: "bearer" or "session", or why not.
func (c *consoleState) authorize(r *http.Request, token string, now time.Time) (string, error) {
	if token == "" {
		return "", errReadOnly
	}
	if h := r.Header.Get("Authorization"); h != "" {
		got, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return "", errBadToken
		}
		return "bearer", nil
	}
	s := c.session(r, token, now)
	if s == "" {
		return "", errNoAuth
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(c.csrf(s))) {
		return "", errBadCSRF
	}
	return "session", nil
}

// localPath keeps a redirect target on this server.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return "/"
	}
	return p
}
