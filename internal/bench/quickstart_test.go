package bench

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/worker"
)

// BenchmarkQuickstart publishes one feed of 100,000 items (about 16 MB)
// end to end on the quickstart's embedded defaults: the sandbox in-process
// with its data file, and the embedded store, both on disk in a fresh
// directory. It reports the wall time of the whole pass (fetch, parse,
// map, store, deliver, every item confirmed) and fails unless the sandbox
// holds every item once.
//
//	go test -run '^$' -bench Quickstart -benchtime 1x -count 5 ./internal/bench/
//
// QUICKSTART_ITEMS sets another feed size; QUICKSTART_EXTRA is YAML added
// to the config (top-level sections, such as "publish:\n  workers: 64\n").
func BenchmarkQuickstart(b *testing.B) {
	items := 100_000
	if s := os.Getenv("QUICKSTART_ITEMS"); s != "" {
		items, _ = strconv.Atoi(s)
	}
	farm := feedfarm.New(feedfarm.Options{Feeds: 1, Items: items, ItemBytes: 60, Seed: DefaultSeed})
	srv := httptest.NewServer(farm)
	defer srv.Close()
	b.ReportMetric(float64(len(farm.Bytes(0)))/(1<<20), "feed-MiB")
	for b.Loop() {
		dir := b.TempDir()
		cfg := fmt.Sprintf(`api:
  base_url: embedded
  sandbox_data: %q
store:
  path: %q
http:
  max_body_size: 64MiB
admin:
  listen: ""
log:
  level: warn
defaults:
  initial_items: %d
%sfeeds:
  - id: big
    url: %s
`, filepath.Join(dir, "sandbox.json"), filepath.Join(dir, "feedworker.db"), items, os.Getenv("QUICKSTART_EXTRA"), feedfarm.URL(srv.URL, 0))
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			b.Fatal(err)
		}
		c, err := worker.LoadConfig(path, "bench")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		w, err := worker.New(b.Context(), worker.Options{Config: c, Version: "bench", Logger: slog.New(slog.DiscardHandler), Out: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Once(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/pass")
		if n := w.Sandbox().Counts()["story"]; n != items {
			b.Fatalf("the sandbox holds %d stories, want %d", n, items)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
