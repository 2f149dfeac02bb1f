package article

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

const storyHTML = `<html><head><title>T</title></head><body><nav>NAV</nav>
<article><h1>Title</h1><p>` + "First paragraph of a story long enough for readability to take it as the article, with words. " +
	"More words so the paragraph is long, and more so it scores well over the threshold of characters. " +
	`</p><p>Second paragraph with a <a href="/rel">relative link</a> and more text to read, the council met again on Friday.</p>
<p>Third paragraph: the budget, the tram, the library, the trees, the bus routes and the noise all came up again.</p></article>
<footer>FOOT</footer></body></html>`

func newTestFetcher(t *testing.T, o Options) (*Fetcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	o.Registerer = reg
	if o.AllowNetworks == nil {
		o.AllowNetworks = loopback
	}
	f, err := NewFetcher(o)
	if err != nil {
		t.Fatal(err)
	}
	return f, reg
}

func count(f *Fetcher, result string) float64 {
	return testutil.ToFloat64(f.fetches.WithLabelValues("feed", result))
}

func TestFetchCausesAndLimits(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/story", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, storyHTML) })
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		fmt.Fprint(w, strings.Replace(storyHTML, "First paragraph", "Caf\xe9 paragraph", 1))
	})
	mux.HandleFunc("/pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, "%PDF-1.4")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, storyHTML+strings.Repeat("<!-- padding -->", 1000))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusGone) })
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html><body></body></html>") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	f, _ := newTestFetcher(t, Options{MaxBytes: 8 << 10, Timeout: 500 * time.Millisecond, MaxRedirects: 3})
	tests := []struct {
		path, selector, cause, want string
	}{
		{"/story", "", "", "Second paragraph"},
		{"/story", "article", "", "Third paragraph"},
		{"/latin1", "article", "", "Café paragraph"},
		{"/story", ".missing", CauseNoMatch, ""},
		{"/pdf", "", CauseNotHTML, ""},
		{"/big", "", CauseTooLarge, ""},
		{"/gone", "", CauseHTTP, ""},
		{"/empty", "", CauseNoContent, ""},
		{"/slow", "", CauseTimeout, ""},
		{"/loop", "", CauseHTTP, ""},
	}
	for _, tc := range tests {
		art, err := f.Fetch(context.Background(), "feed", srv.URL+tc.path, tc.selector)
		var ae *Error
		switch {
		case tc.cause == "" && err != nil:
			t.Errorf("Fetch(%s, %q): %v", tc.path, tc.selector, err)
		case tc.cause == "" && !strings.Contains(art.HTML, tc.want):
			t.Errorf("Fetch(%s, %q) = %q, want it to contain %q", tc.path, tc.selector, art.HTML, tc.want)
		case tc.cause != "" && (!errors.As(err, &ae) || ae.Cause != tc.cause):
			t.Errorf("Fetch(%s, %q) error %v, want cause %s", tc.path, tc.selector, err, tc.cause)
		case tc.cause != "" && !strings.Contains(err.Error(), srv.URL+tc.path):
			t.Errorf("error %q does not name the page", err)
		}
	}
	if art, _ := f.Fetch(context.Background(), "feed", srv.URL+"/story", "article"); strings.Contains(art.HTML, "NAV") || strings.Contains(art.HTML, "FOOT") {
		t.Errorf("selector kept what is outside it: %s", art.HTML)
	}
	for _, bad := range []string{"", "/relative", "ftp://example.org/x", "file:///etc/passwd", "javascript:alert(1)"} {
		_, err := f.Fetch(context.Background(), "feed", bad, "")
		if ae := (*Error)(nil); !errors.As(err, &ae) || ae.Cause != CauseURL {
			t.Errorf("Fetch(%q) = %v, want cause %s", bad, err, CauseURL)
		}
	}
	if got := count(f, CauseNoMatch); got != 1 {
		t.Errorf("no_match count = %v, want 1", got)
	}
}

// TestFetchGuard: loopback is refused unless allowed, also behind a
// redirect from an allowed address.
func TestFetchGuard(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, storyHTML) }))
	t.Cleanup(srv.Close)
	f, _ := newTestFetcher(t, Options{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	for _, page := range []string{srv.URL + "/a", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/b"} {
		_, err := f.Fetch(context.Background(), "feed", page, "")
		if ae := (*Error)(nil); !errors.As(err, &ae) || ae.Cause != CauseBlocked {
			t.Errorf("Fetch(%s) = %v, want cause %s", page, err, CauseBlocked)
		}
	}
	if got := count(f, CauseBlocked); got != 2 {
		t.Errorf("blocked count = %v, want 2", got)
	}
}

// TestFetchCacheAndConditionalGet: a fresh article is served from the
// cache; a stale one is revalidated (304 keeps it, 200 replaces it); a
// failed revalidation keeps the cached article and counts the failure.
func TestFetchCacheAndConditionalGet(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		version = "v1"
		fail    bool
		inm     []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		inm = append(inm, r.Header.Get("If-None-Match"))
		if fail {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		etag := `"` + version + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		fmt.Fprint(w, strings.Replace(storyHTML, "Third paragraph", "Third paragraph "+version, 1))
	}))
	t.Cleanup(srv.Close)
	f, _ := newTestFetcher(t, Options{Fresh: time.Hour})
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	f.now = func() time.Time { return time.Unix(0, now.Load()) }
	later := func(d time.Duration) { now.Add(int64(d)) }
	get := func() string {
		t.Helper()
		art, err := f.Fetch(context.Background(), "feed", srv.URL+"/a", "")
		if err != nil {
			t.Fatal(err)
		}
		return art.HTML
	}

	if !strings.Contains(get(), "Third paragraph v1") {
		t.Fatal("first fetch lacks v1")
	}
	later(10 * time.Minute)
	get() // fresh: no request
	later(time.Hour)
	if !strings.Contains(get(), "v1") { // stale: 304
		t.Error("revalidated article lost v1")
	}
	mu.Lock()
	version = "v2"
	mu.Unlock()
	later(2 * time.Hour)
	if !strings.Contains(get(), "Third paragraph v2") {
		t.Error("changed article not refetched")
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	later(2 * time.Hour)
	if !strings.Contains(get(), "v2") {
		t.Error("failed revalidation lost the cached article")
	}
	mu.Lock()
	got := append([]string(nil), inm...)
	mu.Unlock()
	want := []string{"", `"v1"`, `"v1"`, `"v2"`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("If-None-Match sent %q, want %q", got, want)
	}
	for result, want := range map[string]float64{"ok": 2, "cached": 1, "not_modified": 1, CauseHTTP: 1} {
		if got := count(f, result); got != want {
			t.Errorf("fetches{result=%s} = %v, want %v", result, got, want)
		}
	}
}

// TestFetchPerHostLimit: no more than PerHost requests to one host at once.
func TestFetchPerHostLimit(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond) // holds the slot so others queue up
		fmt.Fprint(w, storyHTML)
	}))
	t.Cleanup(srv.Close)
	f, _ := newTestFetcher(t, Options{PerHost: 2})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := f.Fetch(context.Background(), "feed", fmt.Sprintf("%s/%d", srv.URL, i), ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 {
		t.Errorf("%d requests in flight at once, want at most 2", p)
	}
	f.hosts.mu.Lock()
	left := len(f.hosts.slots)
	f.hosts.mu.Unlock()
	if left != 0 {
		t.Errorf("%d host slot sets left after all fetches, want 0", left)
	}
}
