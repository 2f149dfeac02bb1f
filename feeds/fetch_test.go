package feeds

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/google/go-cmp/cmp"
)

const testRSS = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Test feed</title><link>http://example.com/</link>
<item><title>First</title><guid>1</guid></item>
<item><title>Second</title><guid>2</guid></item>
</channel></rss>`

func newTestFetcher(t *testing.T, h config.HTTP) *Fetcher {
	t.Helper()
	if h.Timeout == 0 {
		h.Timeout = config.Duration(5 * time.Second)
	}
	f, err := NewFetcher(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.CloseIdleConnections)
	return f
}

func serveFeed(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/rss+xml")
	_, _ = io.WriteString(w, body)
}

func TestFetchOKSendsPoliteHeaders(t *testing.T) {
	t.Parallel()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		serveFeed(w, testRSS)
	}))
	defer srv.Close()
	f := newTestFetcher(t, config.HTTP{UserAgent: "feedworker-test/1"})
	res, err := f.Fetch(t.Context(), srv.URL+"/feed", Validators{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NotModified || res.Feed == nil || len(res.Feed.Items) != 2 {
		t.Fatalf("result = %+v, want a parsed feed with 2 items", res)
	}
	want := Validators{ETag: `"v1"`, LastModified: "Mon, 02 Jan 2006 15:04:05 GMT"}
	if diff := cmp.Diff(want, res.Validators); diff != "" {
		t.Errorf("validators (-want +got):\n%s", diff)
	}
	if res.URL != srv.URL+"/feed" || res.MovedTo != "" || res.StatusCode != 200 || res.Bytes != int64(len(testRSS)) {
		t.Errorf("URL %q MovedTo %q Status %d Bytes %d", res.URL, res.MovedTo, res.StatusCode, res.Bytes)
	}
	if ua := got.Get("User-Agent"); ua != "feedworker-test/1" {
		t.Errorf("User-Agent = %q", ua)
	}
	if ae := got.Get("Accept-Encoding"); ae != "gzip, deflate" {
		t.Errorf("Accept-Encoding = %q", ae)
	}
	if got.Get("If-None-Match") != "" || got.Get("If-Modified-Since") != "" {
		t.Errorf("conditional headers sent without validators: %v", got)
	}
	if !strings.Contains(got.Get("Accept"), "application/rss+xml") {
		t.Errorf("Accept = %q", got.Get("Accept"))
	}
}

func TestFetchDefaultUserAgent(t *testing.T) {
	t.Parallel()
	ua := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua <- r.UserAgent()
		serveFeed(w, testRSS)
	}))
	defer srv.Close()
	if _, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), srv.URL, Validators{}); err != nil {
		t.Fatal(err)
	}
	if got, want := <-ua, config.Default().HTTP.UserAgent; got != want {
		t.Errorf("User-Agent = %q, want %q", got, want)
	}
}

func TestFetchNotModifiedSendsValidators(t *testing.T) {
	t.Parallel()
	v := Validators{ETag: `W/"abc"`, LastModified: "Tue, 03 Jan 2006 10:00:00 GMT"}
	var inm, ims string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inm, ims = r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		if inm == v.ETag {
			w.Header().Set("Cache-Control", "max-age=1800")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		serveFeed(w, testRSS)
	}))
	defer srv.Close()
	res, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), srv.URL, v)
	if err != nil {
		t.Fatal(err)
	}
	if inm != v.ETag || ims != v.LastModified {
		t.Errorf("sent If-None-Match %q If-Modified-Since %q, want %q %q", inm, ims, v.ETag, v.LastModified)
	}
	if !res.NotModified || res.Feed != nil {
		t.Fatalf("result = %+v, want NotModified", res)
	}
	if res.Validators != v {
		t.Errorf("validators after 304 = %+v, want the ones sent %+v", res.Validators, v)
	}
	if res.Hint != 30*time.Minute {
		t.Errorf("hint = %v, want 30m from max-age", res.Hint)
	}
	if Class(err) != ClassOK {
		t.Errorf("Class(nil) = %q", Class(err))
	}
}

func TestFetchContentEncodings(t *testing.T) {
	t.Parallel()
	encode := map[string]func([]byte) []byte{
		"gzip": func(b []byte) []byte { return gzipped(t, b) },
		"deflate": func(b []byte) []byte { // zlib-wrapped, as the RFC says
			var buf bytes.Buffer
			zw := zlib.NewWriter(&buf)
			_, _ = zw.Write(b)
			_ = zw.Close()
			return buf.Bytes()
		},
		"raw deflate": func(b []byte) []byte { // what many servers send instead
			var buf bytes.Buffer
			fw, _ := flate.NewWriter(&buf, flate.DefaultCompression)
			_, _ = fw.Write(b)
			_ = fw.Close()
			return buf.Bytes()
		},
	}
	for name, enc := range encode {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := enc([]byte(testRSS))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", strings.TrimPrefix(name, "raw "))
				w.Header().Set("Content-Type", "application/rss+xml")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			res, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), srv.URL, Validators{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Feed.Title != "Test feed" {
				t.Errorf("title = %q", res.Feed.Title)
			}
			if res.Bytes != int64(len(body)) {
				t.Errorf("Bytes = %d, want the %d compressed bytes", res.Bytes, len(body))
			}
		})
	}
}

// hostile servers -----------------------------------------------------------

func TestFetchNeverEndingBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(`<?xml version="1.0"?><rss><channel><title>`))
		chunk := bytes.Repeat([]byte("a"), 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	f := newTestFetcher(t, config.HTTP{MaxBodySize: 256 << 10})
	start := time.Now()
	res, err := f.Fetch(t.Context(), srv.URL, Validators{})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if Class(err) != ClassTooLarge {
		t.Errorf("Class = %q", Class(err))
	}
	if res == nil || res.Bytes > 256<<10+1 {
		t.Errorf("result %+v: read more than the limit", res)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v; the cap should stop the read at once", d)
	}
	if !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("error %q does not name the url", err)
	}
}

func TestFetchSlowDripHitsTotalTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fl := w.(http.Flusher)
		for _, b := range []byte(testRSS) {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			_, _ = w.Write([]byte{b})
			fl.Flush()
		}
	}))
	defer srv.Close()
	f := newTestFetcher(t, config.HTTP{Timeout: config.Duration(300 * time.Millisecond)})
	start := time.Now()
	_, err := f.Fetch(t.Context(), srv.URL, Validators{})
	if err == nil {
		t.Fatal("slow drip fetched without error")
	}
	if Class(err) != ClassTimeout {
		t.Errorf("Class = %q for %v, want %q", Class(err), err, ClassTimeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v, total timeout is 300ms", d)
	}
}

func TestFetchGzipBomb(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An endless stream of compressed zeros: ~1000:1.
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/rss+xml")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
		zeros := make([]byte, 64<<10)
		for r.Context().Err() == nil {
			if _, err := zw.Write(zeros); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	// A generous timeout: the cap must stop the read, and under the race
	// detector on a loaded machine compressing the stream is slow.
	f := newTestFetcher(t, config.HTTP{MaxBodySize: 1 << 20, Timeout: config.Duration(2 * time.Minute)})
	res, err := f.Fetch(t.Context(), srv.URL, Validators{})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), "decompressed") {
		t.Errorf("error %q should say the decompressed size was the problem", err)
	}
	if res.Bytes >= 1<<20 {
		t.Errorf("read %d bytes on the wire; the decompressed cap should stop far earlier", res.Bytes)
	}
}

func TestFetchGzipBodyWithoutContentEncodingIsCapped(t *testing.T) {
	t.Parallel()
	bomb := gzipped(t, make([]byte, 4<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(bomb)
	}))
	defer srv.Close()
	_, err := newTestFetcher(t, config.HTTP{MaxBodySize: 1 << 20}).Fetch(t.Context(), srv.URL, Validators{})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestFetchRedirects(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	mux := http.NewServeMux()
	redirect := func(from, to string, code int) {
		mux.HandleFunc(from, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[from]++
			mu.Unlock()
			http.Redirect(w, r, to, code)
		})
	}
	redirect("/loop/a", "/loop/b", http.StatusFound)
	redirect("/loop/b", "/loop/a", http.StatusFound)
	redirect("/perm", "/feed", http.StatusMovedPermanently)
	redirect("/perm308", "/feed", http.StatusPermanentRedirect)
	redirect("/temp", "/feed", http.StatusFound)
	redirect("/temp307", "/feed", http.StatusTemporaryRedirect)
	redirect("/perm-then-temp", "/temp", http.StatusMovedPermanently)
	redirect("/temp-then-perm", "/perm", http.StatusFound)
	redirect("/old", "/new", http.StatusMovedPermanently)
	redirect("/to-file", "file:///etc/passwd", http.StatusFound)
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/feed", func(w http.ResponseWriter, r *http.Request) { serveFeed(w, testRSS) })
	mux.HandleFunc("/chain/", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/chain/"))
		mu.Lock()
		hits["/chain/"]++
		mu.Unlock()
		http.Redirect(w, r, fmt.Sprintf("/chain/%d", n+1), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := newTestFetcher(t, config.HTTP{MaxRedirects: 3})

	tests := []struct {
		path        string
		wantErr     error
		wantURL     string
		wantMovedTo string
	}{
		{path: "/perm", wantURL: "/feed", wantMovedTo: "/feed"},
		{path: "/perm308", wantURL: "/feed", wantMovedTo: "/feed"},
		{path: "/temp", wantURL: "/feed"},
		{path: "/temp307", wantURL: "/feed"},
		// The permanent hop is remembered, the temporary one after it is not.
		{path: "/perm-then-temp", wantURL: "/feed", wantMovedTo: "/temp"},
		// A temporary hop first: the original URL stays the feed's URL.
		{path: "/temp-then-perm", wantURL: "/feed"},
		{path: "/old", wantErr: ErrGone, wantURL: "/new", wantMovedTo: "/new"},
		{path: "/loop/a", wantErr: ErrRedirectLoop},
		{path: "/chain/0", wantErr: ErrTooManyRedirects},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, err := f.Fetch(t.Context(), srv.URL+tt.path, Validators{})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && res.Feed == nil {
				t.Fatal("no feed")
			}
			if tt.wantURL != "" && res.URL != srv.URL+tt.wantURL {
				t.Errorf("URL = %q, want %q", res.URL, srv.URL+tt.wantURL)
			}
			want := ""
			if tt.wantMovedTo != "" {
				want = srv.URL + tt.wantMovedTo
			}
			if res != nil && res.MovedTo != want {
				t.Errorf("MovedTo = %q, want %q", res.MovedTo, want)
			}
			if tt.wantErr != nil && Class(err) != map[error]string{ErrGone: ClassGone}[tt.wantErr] && Class(err) != ClassHTTP {
				t.Errorf("Class = %q", Class(err))
			}
			if tt.wantErr != nil && !strings.Contains(err.Error(), srv.URL+tt.path) {
				t.Errorf("error %q does not name the feed url", err)
			}
		})
	}
	if hits["/chain/"] != 4 {
		t.Errorf("redirect chain: %d requests, want 4 (the first + 3 redirects)", hits["/chain/"])
	}
	if hits["/loop/a"] != 1 || hits["/loop/b"] != 1 {
		t.Errorf("redirect loop: hits %v, want each URL once", hits)
	}

	_, err := f.Fetch(t.Context(), srv.URL+"/to-file", Validators{})
	if err == nil || !strings.Contains(err.Error(), "unsupported scheme") {
		t.Errorf("redirect to file:// = %v, want it refused", err)
	}
}

func TestFetch301Then410(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), srv.URL+"/old", Validators{ETag: `"x"`})
	if !errors.Is(err, ErrGone) || Class(err) != ClassGone {
		t.Fatalf("err = %v (class %s), want ErrGone", err, Class(err))
	}
	if res == nil || res.MovedTo != srv.URL+"/new" || res.StatusCode != http.StatusGone {
		t.Errorf("result = %+v, want MovedTo %s and status 410", res, srv.URL+"/new")
	}
	want := fmt.Sprintf("fetch %s/old (redirected to %s/new): feed is gone (http 410)", srv.URL, srv.URL)
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestFetchRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		want       time.Duration
		wantClass  string
	}{
		{"429 seconds", 429, "120", 2 * time.Minute, ClassRateLimited},
		{"429 http date", 429, now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, ClassRateLimited},
		{"429 date in the past", 429, now.Add(-time.Hour).Format(http.TimeFormat), 0, ClassRateLimited},
		{"429 garbage", 429, "soon", 0, ClassRateLimited},
		{"429 without header", 429, "", 0, ClassRateLimited},
		{"503 seconds", 503, "3600", time.Hour, ClassRateLimited},
		{"503 without header is a plain status error", 503, "", 0, ClassHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			f := newTestFetcher(t, config.HTTP{})
			f.now = func() time.Time { return now }
			_, err := f.Fetch(t.Context(), srv.URL, Validators{})
			if got := Class(err); got != tt.wantClass {
				t.Fatalf("Class(%v) = %q, want %q", err, got, tt.wantClass)
			}
			var ra *RetryAfterError
			if tt.wantClass == ClassRateLimited {
				if !errors.As(err, &ra) {
					t.Fatalf("err = %v, want a *RetryAfterError", err)
				}
				if ra.RetryAfter != tt.want || ra.StatusCode != tt.status {
					t.Errorf("RetryAfterError = %+v, want %v after status %d", ra, tt.want, tt.status)
				}
			} else {
				var se *StatusError
				if !errors.As(err, &se) || se.StatusCode != tt.status {
					t.Errorf("err = %v, want a *StatusError with %d", err, tt.status)
				}
			}
		})
	}
}

func TestFetchStatusErrorRedactsURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://alice:s3cr3tpw@", 1) + "/feed?api_token=t0k3n&page=2"
	_, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), u, Validators{})
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 500 || Class(err) != ClassHTTP {
		t.Fatalf("err = %v, want a 500 *StatusError", err)
	}
	msg := err.Error()
	for _, secret := range []string{"s3cr3tpw", "alice", "t0k3n"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q leaks %q", msg, secret)
		}
	}
	if !strings.Contains(msg, "/feed?") || !strings.Contains(msg, "page=2") || !strings.Contains(msg, "500") {
		t.Errorf("error %q should name the feed and the status", msg)
	}
}

func TestFetchWrongContentType(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"html"`)
		_, _ = w.Write([]byte("<!DOCTYPE html><html><head><title>Welcome</title></head><body><h1>Our new site!</h1></body></html>"))
	}))
	defer srv.Close()
	res, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), srv.URL, Validators{})
	var pe *ParseError
	if !errors.As(err, &pe) || Class(err) != ClassParse {
		t.Fatalf("err = %v, want a *ParseError", err)
	}
	if !strings.Contains(err.Error(), "HTML") {
		t.Errorf("error %q should say it is HTML", err)
	}
	if res == nil || res.Feed != nil || res.Validators != (Validators{}) {
		t.Errorf("result %+v: a failed parse must not yield validators", res)
	}
}

func TestFetchFailingMidBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v2"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(testRSS)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(testRSS[:len(testRSS)/2]))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	res, err := newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), srv.URL, Validators{ETag: `"v1"`})
	if err == nil {
		t.Fatal("truncated body fetched without error")
	}
	if Class(err) != ClassNetwork {
		t.Errorf("Class = %q for %v", Class(err), err)
	}
	if res != nil && (res.Feed != nil || res.Validators.ETag == `"v2"`) {
		t.Errorf("result %+v carries the new validators of a failed fetch", res)
	}
}

func TestFetchConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = newTestFetcher(t, config.HTTP{}).Fetch(t.Context(), "http://"+addr+"/feed", Validators{})
	if Class(err) != ClassNetwork {
		t.Errorf("Class(%v) = %q, want %q", err, Class(err), ClassNetwork)
	}
}

func TestFetchConfiguredProxy(t *testing.T) {
	t.Parallel()
	var gotHost string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A forward proxy receives the absolute URL of the feed.
		gotHost = r.URL.Host
		serveFeed(w, testRSS)
	}))
	defer proxy.Close()
	f := newTestFetcher(t, config.HTTP{Proxy: proxy.URL})
	res, err := f.Fetch(t.Context(), "http://feeds.example.invalid/rss", Validators{})
	if err != nil {
		t.Fatal(err)
	}
	if gotHost != "feeds.example.invalid" || res.Feed.Title != "Test feed" {
		t.Errorf("proxy saw host %q, title %q", gotHost, res.Feed.Title)
	}

	if _, err := NewFetcher(config.HTTP{Proxy: "ftp://proxy:21"}); err == nil {
		t.Error("ftp proxy accepted")
	}
	if _, err := NewFetcher(config.HTTP{Proxy: "://user:pw@x"}); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad proxy error = %v", err)
	}
}

func TestFetchFileURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "feed.xml")
	if err := os.WriteFile(p, readTestdata(t, "feed-rs__rss_2.0_spec_1.xml"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newTestFetcher(t, config.HTTP{MaxBodySize: 64 << 10})
	res, err := f.Fetch(t.Context(), "file://"+p, Validators{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Feed.Title != "Scripting News" || res.Hint != 40*time.Minute || res.Validators.ETag == "" {
		t.Errorf("file result: title %q hint %v validators %+v", res.Feed.Title, res.Hint, res.Validators)
	}
	again, err := f.Fetch(t.Context(), "file://"+p, res.Validators)
	if err != nil || !again.NotModified {
		t.Errorf("unchanged file: %+v, %v; want NotModified", again, err)
	}

	big := filepath.Join(dir, "big.xml")
	if err := os.WriteFile(big, make([]byte, 65<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(t.Context(), "file://"+big, Validators{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big file: %v, want ErrTooLarge", err)
	}
	// A file that cannot be read says so, and is not a network error.
	missing := filepath.Join(dir, "missing.xml")
	if _, err := f.Fetch(t.Context(), "file://"+missing, Validators{}); !errors.Is(err, os.ErrNotExist) ||
		Class(err) != ClassFile || !strings.Contains(err.Error(), "file not found: "+missing) {
		t.Errorf("missing file: %v (class %s), want ErrNotExist, %s, naming the path", err, Class(err), ClassFile)
	}
	if _, err := f.Fetch(t.Context(), "file://"+dir, Validators{}); err == nil || Class(err) != ClassFile {
		t.Errorf("a directory: %v (class %s), want an error of class %s", err, Class(err), ClassFile)
	}
	if _, err := f.Fetch(t.Context(), "file://otherhost/etc/passwd", Validators{}); err == nil {
		t.Error("remote file host accepted")
	}
	if _, err := f.Fetch(t.Context(), "gopher://example.com/", Validators{}); err == nil {
		t.Error("gopher scheme accepted")
	}
}

func TestHeaderHint(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	date := now.Add(-time.Hour) // the server's clock is an hour behind ours
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"nothing", http.Header{}, 0},
		{"max-age", http.Header{"Cache-Control": {"public, max-age=3600"}}, time.Hour},
		{"max-age minus age", http.Header{"Cache-Control": {"max-age=3600"}, "Age": {"600"}}, 50 * time.Minute},
		{"max-age beats expires", http.Header{"Cache-Control": {"max-age=60"}, "Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, time.Minute},
		{"no-cache", http.Header{"Cache-Control": {"no-cache, max-age=3600"}}, 0},
		{"expires relative to date", http.Header{"Date": {date.Format(http.TimeFormat)}, "Expires": {date.Add(2 * time.Hour).Format(http.TimeFormat)}}, 2 * time.Hour},
		{"expires without date", http.Header{"Expires": {now.Add(20 * time.Minute).Format(http.TimeFormat)}}, 20 * time.Minute},
		{"expires in the past", http.Header{"Expires": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"expires 0", http.Header{"Expires": {"0"}}, 0},
	}
	for _, tt := range tests {
		if got := headerHint(tt.header, now); got != tt.want {
			t.Errorf("%s: headerHint = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFetchHintTakesTheLonger(t *testing.T) {
	t.Parallel()
	body := strings.Replace(testRSS, "<link>", "<ttl>90</ttl><link>", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age="+r.URL.Query().Get("max-age"))
		serveFeed(w, body)
	}))
	defer srv.Close()
	f := newTestFetcher(t, config.HTTP{})
	for maxAge, want := range map[string]time.Duration{"60": 90 * time.Minute, "7200": 2 * time.Hour} {
		res, err := f.Fetch(t.Context(), srv.URL+"/?max-age="+maxAge, Validators{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Hint != want {
			t.Errorf("ttl 90m, max-age %ss: hint %v, want %v", maxAge, res.Hint, want)
		}
	}
}

func TestClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ClassOK},
		{fmt.Errorf("fetch x: %w", ErrGone), ClassGone},
		{fmt.Errorf("fetch x: %w", &RetryAfterError{StatusCode: 429}), ClassRateLimited},
		{fmt.Errorf("fetch x: %w", &StatusError{StatusCode: 404}), ClassHTTP},
		{fmt.Errorf("fetch x: %w", ErrRedirectLoop), ClassHTTP},
		{fmt.Errorf("fetch x: %w", ErrTooManyRedirects), ClassHTTP},
		{fmt.Errorf("fetch x: %w", ErrTooLarge), ClassTooLarge},
		{fmt.Errorf("fetch x: %w", &ParseError{Err: errors.New("bad")}), ClassParse},
		{fmt.Errorf("feed a: %w", &HandlerError{Err: &ParseError{Err: errors.New("x")}}), ClassStore},
		{fmt.Errorf("fetch x: %w", context.DeadlineExceeded), ClassTimeout},
		{fmt.Errorf("fetch x: %w", context.Canceled), ClassTimeout},
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, ClassTimeout},
		{&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, ClassNetwork},
		{errors.New("connection reset by peer"), ClassNetwork},
		{fmt.Errorf("fetch x: %w", &FileError{Path: "/x", Err: os.ErrNotExist}), ClassFile},
		{fmt.Errorf("fetch x: %w", &FileError{Path: "/x", Err: os.ErrPermission}), ClassFile},
	}
	for _, tt := range tests {
		if got := Class(tt.err); got != tt.want {
			t.Errorf("Class(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
