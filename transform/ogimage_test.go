package transform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestOGImageFetcher(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<html><head><meta property="og:image" content="/img/cover.jpg"><meta name="twitter:image" content="https://cdn.example/t.jpg"></head><body>x</body></html>`)
	})
	mux.HandleFunc("/twitter-only", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><head><meta name="twitter:image" content="https://cdn.example/t.jpg"></head></html>`)
	})
	mux.HandleFunc("/none", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<html><head><title>x</title></head></html>`)
	})
	mux.HandleFunc("/javascript", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<meta property="og:image" content="javascript:alert(1)">`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><head>"+strings.Repeat("<!-- padding -->", 1000)+`<meta property="og:image" content="/late.jpg"></head></html>`)
	})
	mux.HandleFunc("/pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, `<meta property="og:image" content="/x.jpg">`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/article", http.StatusFound)
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "boom", http.StatusBadGateway)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	f := NewOGImageFetcher(OGImageOptions{AllowNetworks: loopback, MaxBytes: 4096, Timeout: 300 * time.Millisecond, CacheSize: 2})
	ctx := context.Background()
	tests := []struct {
		path, want string
		wantErr    bool
	}{
		{"/article", srv.URL + "/img/cover.jpg", false},
		{"/twitter-only", "https://cdn.example/t.jpg", false},
		{"/none", "", false},
		{"/javascript", "", false},
		{"/big", "", false}, // the tag is past MaxBytes
		{"/pdf", "", false},
		{"/redirect", srv.URL + "/img/cover.jpg", false},
		{"/slow", "", true},
		{"/error", "", true},
	}
	for _, tc := range tests {
		got, err := f.Fetch(ctx, srv.URL+tc.path)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Fetch(%s) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.wantErr)
		}
	}

	// Answers are cached (also "none"); errors are not; the cache is bounded.
	hits.Store(0)
	f2 := NewOGImageFetcher(OGImageOptions{AllowNetworks: loopback, CacheSize: 2})
	for range 3 {
		for _, p := range []string{"/article", "/none", "/error"} {
			_, _ = f2.Fetch(ctx, srv.URL+p)
		}
	}
	if got := hits.Load(); got != 2+3 {
		t.Errorf("server hits: got %d, want 5 (article and none once each, error every time)", got)
	}
	for _, p := range []string{"/twitter-only", "/big", "/pdf"} {
		_, _ = f2.Fetch(ctx, srv.URL+p)
	}
	if n := f2.order.Len(); n != 2 || len(f2.index) != 2 {
		t.Errorf("cache holds %d entries (%d indexed), want the cap 2", n, len(f2.index))
	}
}

func TestOGImageFetcherRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<meta property="og:image" content="https://cdn.example/x.jpg">`)
	}))
	t.Cleanup(srv.Close)
	f := NewOGImageFetcher(OGImageOptions{Timeout: time.Second})
	ctx := context.Background()
	for _, page := range []string{srv.URL + "/a", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/b"} {
		if _, err := f.Fetch(ctx, page); !errors.Is(err, ErrNotPublic) {
			t.Errorf("Fetch(%s): got error %v, want ErrNotPublic", page, err)
		}
	}
	for _, page := range []string{"file:///etc/passwd", "ftp://example.org/x", "javascript:alert(1)", "/relative"} {
		if _, err := f.Fetch(ctx, page); err == nil {
			t.Errorf("Fetch(%s): got no error, want a refusal", page)
		}
	}

	// A redirect is checked like the first address: here only the first
	// server counts as public.
	pub := httptest.NewServer(http.RedirectHandler(srv.URL+"/a", http.StatusFound))
	t.Cleanup(pub.Close)
	pubAddr := netip.MustParseAddrPort(strings.TrimPrefix(pub.URL, "http://"))
	f3 := newOGImageFetcher(OGImageOptions{Timeout: time.Second}, func(ap netip.AddrPort) bool { return ap == pubAddr })
	if _, err := f3.Fetch(ctx, pub.URL); !errors.Is(err, ErrNotPublic) || !strings.Contains(err.Error(), strings.TrimPrefix(srv.URL, "http://")) {
		t.Errorf("redirect to a private address: got %v, want ErrNotPublic naming %s", err, srv.URL)
	}
}

// loopback lets tests reach their httptest servers through the guard, the
// way http.allow_networks does for internal sites.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
