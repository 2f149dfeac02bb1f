package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/feeds"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/transform"
	"github.com/feedworker/feedworker/worker"
)

// BenchmarkItem is the worker's work per item beside a raw gofeed parse of
// the same bytes, a document of the bench's farm (20 items with about 1.5
// KB of HTML each): "gofeed" parses it; "worker" parses it the way the
// fetcher does (charset and XML clean-up, then gofeed) and maps it with
// the mapping the bench's config compiles to (filter, URLs, fields,
// sanitized HTML). The ratio of their ns/item is the cost of the mapping.
//
//	go test -run '^$' -bench Item -count 10 ./internal/bench/
func BenchmarkItem(b *testing.B) {
	const items = 20
	farm := feedfarm.New(feedfarm.Options{Feeds: 4, Items: items, Seed: DefaultSeed})
	docs := [][]byte{farm.Bytes(0), farm.Bytes(1), farm.Bytes(2), farm.Bytes(3)}
	m := benchMapping(b)
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

	b.Run("gofeed", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		cpu0 := processCPU()
		for b.Loop() {
			doc := docs[n%len(docs)]
			n++
			if _, err := gofeed.NewParser().Parse(bytes.NewReader(doc)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*items), "ns/item")
		// CPU time (the GC's included) is steadier than wall time on a
		// shared machine.
		b.ReportMetric((processCPU()-cpu0)*1e9/float64(n*items), "cpu-ns/item")
	})
	b.Run("worker", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		cpu0 := processCPU()
		for b.Loop() {
			doc := docs[n%len(docs)]
			n++
			feed, err := feeds.Parse(doc, "application/rss+xml; charset=utf-8")
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range m.Map(feed, now) {
				if r.Err != nil || r.Payload == nil {
					b.Fatalf("map: %+v", r)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*items), "ns/item")
		// CPU time (the GC's included) is steadier than wall time on a
		// shared machine.
		b.ReportMetric((processCPU()-cpu0)*1e9/float64(n*items), "cpu-ns/item")
	})
	// "map" is the mapping alone, of documents parsed beforehand: the part
	// of "worker" that is not the parse, without the parse's noise.
	parsed := make([]*gofeed.Feed, len(docs))
	for i, doc := range docs {
		feed, err := feeds.Parse(doc, "application/rss+xml; charset=utf-8")
		if err != nil {
			b.Fatal(err)
		}
		parsed[i] = feed
	}
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		cpu0 := processCPU()
		for b.Loop() {
			feed := parsed[n%len(parsed)]
			n++
			for _, r := range m.Map(feed, now) {
				if r.Err != nil || r.Payload == nil {
					b.Fatalf("map: %+v", r)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*items), "ns/item")
		// CPU time (the GC's included) is steadier than wall time on a
		// shared machine.
		b.ReportMetric((processCPU()-cpu0)*1e9/float64(n*items), "cpu-ns/item")
	})
}

// benchMapping compiles the mapping of the bench's worker config: one
// feed and the built-in defaults.
func benchMapping(b *testing.B) *transform.Mapping {
	b.Helper()
	path := filepath.Join(b.TempDir(), "config.yaml")
	cfg := "api:\n  base_url: embedded\nadmin:\n  listen: \"\"\nfeeds:\n  - id: farm-0\n    url: http://127.0.0.1:1/feed/0.xml\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	c, err := worker.LoadConfig(path, "bench")
	if err != nil {
		b.Fatal(err)
	}
	m, err := transform.Compile(c.Feeds[0].ID, c.Feeds[0].Mapping)
	if err != nil {
		b.Fatal(err)
	}
	return m
}
