package worker

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// userAgents records the User-Agent of every request a handler serves.
type userAgents struct {
	h  http.Handler
	mu sync.Mutex
	by map[string]int // user agent → requests
}

func (u *userAgents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.by[r.Method+" "+r.URL.Path+" "+r.UserAgent()]++
	u.mu.Unlock()
	u.h.ServeHTTP(w, r)
}

// TestOneUserAgent checks that the feeds, the API and its token endpoint
// all see http.user_agent, and no other.
func TestOneUserAgent(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	api := &userAgents{h: sb, by: map[string]int{}}
	ss := httptest.NewServer(api)
	t.Cleanup(ss.Close)
	farm := feedfarm.New(feedfarm.Options{Feeds: 2, Items: 2, Seed: 1})
	feedsSeen := &userAgents{h: farm, by: map[string]int{}}
	fs := httptest.NewServer(feedsSeen)
	t.Cleanup(fs.Close)
	e := &env{sb: sb, sbURL: ss.URL, farm: farm, farmURL: fs.URL, dir: t.TempDir()}
	cfg := e.config(t, testSecret, "")
	const ua = "ua-test/1 (+https://example.test)"
	cfg.HTTP.UserAgent = ua
	w := newWorker(t, cfg, Options{})
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatalf("Once: %v", err)
	}
	if len(e.sb.AllContent()) != 4 {
		t.Fatalf("%d items on the API, want 4", len(e.sb.AllContent()))
	}
	for name, u := range map[string]*userAgents{"API": api, "feed": feedsSeen} {
		u.mu.Lock()
		token := false
		for req, n := range u.by {
			if req[len(req)-len(ua):] != ua {
				t.Errorf("%s request %q (%d times) without the configured user agent", name, req, n)
			}
			token = token || req == "POST /oauth/token "+ua
		}
		if name == "API" && !token {
			t.Errorf("no token request with the user agent: %v", u.by)
		}
		u.mu.Unlock()
	}
}
