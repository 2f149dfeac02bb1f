package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/internal/feedfarm"
)

// TestReloadWhileRunning edits the config file of a running worker: an
// added feed is published, a changed feed keeps its state (nothing is
// posted again), a removed feed stops, and an invalid file is refused
// while the running config stays.
func TestReloadWhileRunning(t *testing.T) {
	e := newEnv(t, 3, 2)
	path := filepath.Join(e.dir, "live.yaml")
	write := func(feeds []int, extra string) {
		t.Helper()
		var b strings.Builder
		fmt.Fprintf(&b, `api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: %s
store:
  path: %s
admin:
  listen: ""
http:
  min_interval: 100ms
defaults:
  interval: 200ms
  initial_items: 100
feeds:
`, e.sbURL, e.sbURL, testSecret, filepath.Join(e.dir, "live.db"))
		for _, n := range feeds {
			fmt.Fprintf(&b, "  - id: farm-%d\n    url: %s\n%s", n, feedfarm.URL(e.farmURL, n), extra)
		}
		// Write then rename, as editors do.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write([]int{0}, "")
	cfg, err := LoadConfig(path, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, cfg, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	waitUntil(t, "farm-0 published", func() bool { return len(e.sb.AllContent()) == 2 })

	// Add farm-1 and change farm-0 (a category); nothing is posted twice.
	write([]int{0, 1}, "    more_button_text: Read more\n")
	waitUntil(t, "farm-1 published after the reload", func() bool { return len(e.sb.AllContent()) == 4 })
	if got := testutil.ToFloat64(w.metrics.reloads.WithLabelValues("ok")); got < 1 {
		t.Errorf("reloads ok = %v, want at least 1", got)
	}

	// An invalid file is refused; the running feeds go on.
	before := testutil.ToFloat64(w.metrics.reloads.WithLabelValues("invalid"))
	if err := os.WriteFile(path, []byte("feeds:\n  - id: [broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the invalid file refused", func() bool {
		return testutil.ToFloat64(w.metrics.reloads.WithLabelValues("invalid")) > before
	})
	if ids := feedIDs(w); strings.Join(ids, ",") != "farm-0,farm-1" {
		t.Errorf("after an invalid file the worker polls %v, want farm-0,farm-1", ids)
	}

	// Remove farm-0: it leaves the poller; farm-2 comes in.
	write([]int{1, 2}, "")
	waitUntil(t, "farm-2 published", func() bool { return len(e.sb.AllContent()) == 6 })
	if ids := feedIDs(w); strings.Join(ids, ",") != "farm-1,farm-2" {
		t.Errorf("after removing farm-0 the worker polls %v, want farm-1,farm-2", ids)
	}
	time.Sleep(500 * time.Millisecond) // more polls of every feed
	byExt := map[string]int{}
	for _, it := range e.sb.AllContent() {
		byExt[it.ExternalID]++
		if byExt[it.ExternalID] > 1 {
			t.Errorf("%s posted twice", it.ExternalID)
		}
	}
}

func feedIDs(w *Worker) []string {
	var ids []string
	for _, f := range w.poller.Snapshot() {
		ids = append(ids, f.ID)
	}
	return ids
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
