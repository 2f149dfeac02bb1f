package feeds

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// BenchmarkNotModified is a 304 poll three ways on the same local server,
// which answers 304 to the right If-None-Match: a bare net/http
// conditional GET (the floor), the project's Fetcher, and a whole poll
// through the Poller (fetch, metrics, state, schedule). The ratio of
// fetcher to net-http is the cost of the Fetcher's politeness and checks.
//
//	go test -run '^$' -bench NotModified -count 10 ./feeds/
func BenchmarkNotModified(b *testing.B) {
	const etag = `"v1"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		serveFeed(w, testRSS)
	}))
	b.Cleanup(srv.Close)
	url := srv.URL + "/feed.xml"
	ctx := context.Background()

	b.Run("net-http", func(b *testing.B) {
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.Cleanup(client.CloseIdleConnections)
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("If-None-Match", etag)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotModified {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("fetcher", func(b *testing.B) {
		f, err := NewFetcher(config.HTTP{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(f.CloseIdleConnections)
		b.ReportAllocs()
		for b.Loop() {
			res, err := f.Fetch(ctx, url, Validators{ETag: etag})
			if err != nil || !res.NotModified {
				b.Fatalf("fetch = %+v, %v", res, err)
			}
		}
	})
	b.Run("poller", func(b *testing.B) {
		h := newTestHandler()
		h.store["f"] = Validators{ETag: etag}
		p, err := NewPoller(PollerOptions{HTTP: config.HTTP{MinInterval: config.Duration(time.Millisecond)}, Handler: h})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.fetcher.CloseIdleConnections)
		p.Update([]config.Feed{{ID: "f", URL: url}})
		b.ReportAllocs()
		for b.Loop() {
			if r := p.PollAll(ctx); len(r) != 1 || r[0].Class != ClassNotModified {
				b.Fatalf("poll = %+v", r)
			}
		}
	})
}
