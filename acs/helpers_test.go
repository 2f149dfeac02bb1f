package acs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// testToken is the bearer token of test clients; tests assert it never
// leaks into errors.
const testToken = "tok-SECRET-123"

// seen is one request as the test server received it.
type seen struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     string
}

// recorder is an httptest server that records every request and answers
// through a handler chosen by the test.
type recorder struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// newRecorder starts a server; handler gets the index of the request (from
// 0) besides the usual arguments.
func newRecorder(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, n int)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read request body: %v", err)
		}
		rec.mu.Lock()
		n := len(rec.reqs)
		rec.reqs = append(rec.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)})
		rec.mu.Unlock()
		handler(w, r, n)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// fastRetry keeps retry tests quick.
func fastRetry() RetryPolicy {
	return RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}
}

// newTestClient builds a client with a static token and fast retries on
// rec's server.
func newTestClient(t *testing.T, rec *recorder, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithRetryPolicy(fastRetry())}, opts...)
	// The server's own transport, not http.DefaultTransport: every
	// httptest server's Close closes the default transport's idle
	// connections, breaking one a parallel test has just taken (its
	// DELETE then retried and the server saw it twice).
	c, err := NewClient(rec.srv.URL, StaticToken(testToken).HTTPClient(rec.srv.Client().Transport), opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// reply writes status and body as JSON.
func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// waits records the waits the client asks for instead of sleeping them.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}
