package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// The store-loss tests: the store forgets everything (or one cluster
// node's part of it) while the API keeps what was posted. Nothing may be
// posted twice, nothing lost, and the look-ups are counted: at most one
// GET per 100 items of a reconcile pass (every pass here has fewer than
// 100 items), plus the page scans when the filter is refused.

// reconcileFigures are the reconcile metrics of one worker.
type reconcileFigures struct {
	passes, filter, scan, losses float64
	found, posted, seen          float64
}

func scrapeReconcile(t *testing.T, admin string) reconcileFigures {
	t.Helper()
	url := "http://" + admin + "/metrics"
	var f reconcileFigures
	sum := func(name, label string) float64 {
		var v float64
		for _, l := range scrapeLines(t, url, name) {
			if strings.Contains(l, label) {
				var x float64
				if _, err := fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &x); err == nil {
					v += x
				}
			}
		}
		return v
	}
	f.passes = sum("feedworker_reconcile_passes_total", "")
	f.filter = sum("feedworker_reconcile_lookups_total", `kind="filter"`)
	f.scan = sum("feedworker_reconcile_lookups_total", `kind="scan"`)
	f.losses = sum("feedworker_reconcile_store_losses_total", "")
	f.found = sum("feedworker_reconcile_items_total", `outcome="found"`)
	f.posted = sum("feedworker_reconcile_items_total", `outcome="new"`)
	f.seen = sum("feedworker_reconcile_items_total", `outcome="seen"`)
	return f
}

// scrapeLines returns the sample lines of one metric from a /metrics page.
func scrapeLines(t *testing.T, url, name string) []string {
	t.Helper()
	var resp *http.Response
	var err error
	for range 50 {
		if resp, err = http.Get(url); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			out = append(out, l)
		}
	}
	return out
}

// checkLookups holds a worker's look-ups to the bound: every pass here
// reconciles fewer than 100 items, so one filtered GET each, unless the
// filter was refused: then a refused GET (per pass at most) and page scans.
func checkLookups(t *testing.T, f reconcileFigures, refused bool) {
	t.Helper()
	items := f.found + f.posted + f.seen
	t.Logf("reconcile: %v passes, %v items (%v found, %v posted, %v seen only), %v filtered GETs, %v scanned pages, %v store losses; %.3f GETs per item",
		f.passes, items, f.found, f.posted, f.seen, f.filter, f.scan, f.losses, (f.filter+f.scan)/max(items, 1))
	switch {
	case !refused && f.filter > f.passes:
		t.Errorf("%v filtered GETs for %v passes of under 100 items; want at most one per pass", f.filter, f.passes)
	case !refused && f.scan != 0:
		t.Errorf("%v pages scanned with a searchable external_id; want 0", f.scan)
	case refused && (f.filter < 1 || f.filter > f.passes || f.scan < 1):
		// Passes running at once may each try the filter before the first
		// refusal is known; later ones scan at once.
		t.Errorf("%v filtered GETs and %v scanned pages in %v passes on a service refusing the filter; want a refused GET, at most one per pass, then scans", f.filter, f.scan, f.passes)
	}
	if f.found == 0 {
		t.Error("no item was found on the API by a look-up; the store loss tested nothing")
	}
}

// TestStoreLossFlushAllMidRun (store loss a): FLUSHALL on Redis while a
// worker publishes under commit-then-fail answers; then new items.
func TestStoreLossFlushAllMidRun(t *testing.T) {
	srv := dedupetest.StartServer(t) // a private Redis: the FLUSHALL never reaches a shared one
	e := newE2E(t, feedfarm.Options{Feeds: 6, Items: 40, Seed: 21}, sandbox.Faults{CommitThenFail: 0.3, Latency: 15 * time.Millisecond, Seed: 22})
	e.redisURL = "redis://" + srv.Addr() + "/0"
	e.workers = 2
	admin := freeAddr(t)
	cmd := e.start("flushall", "run", "--config", e.config("flushall", admin))
	want := 6 * 40
	waitFor(t, 60*time.Second, "publishing to start", func() bool { return len(e.sb.AllContent()) > 40 })
	rc := redis.NewClient(srv.Options())
	defer rc.Close()
	if err := rc.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	flushedAt := len(e.sb.AllContent())
	t.Logf("FLUSHALL with %d of %d items on the API", flushedAt, want)
	waitFor(t, 90*time.Second, fmt.Sprintf("%d items after the FLUSHALL", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	// Items first seen after the loss are posted once too.
	added, _ := e.farm.Change(1, 1)
	want += added
	waitFor(t, 60*time.Second, fmt.Sprintf("%d items after new ones", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	time.Sleep(time.Second) // anything still in flight would show as a duplicate
	f := scrapeReconcile(t, admin)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("worker after SIGTERM: %v (log %s)", err, filepath.Join(e.dir, "flushall.log"))
	}
	e.assertExactlyOnce(want)
	if flushedAt >= 6*40 {
		t.Error("everything was published before the FLUSHALL; the test proved nothing")
	}
	if f.losses < 2 {
		t.Errorf("store losses = %v; want 2 (the new store at start, the FLUSHALL)", f.losses)
	}
	checkLookups(t, f, false)
}

// TestStoreLossEmbeddedFileDeleted (store loss b): the embedded store's
// file is deleted between two runs, on a service that refuses the
// external_id filter (the page-scan path), under commit-then-fail answers.
func TestStoreLossEmbeddedFileDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	farm := feedfarm.New(feedfarm.Options{Feeds: 4, Items: 30, Seed: 31})
	fs := httptest.NewServer(farm)
	t.Cleanup(fs.Close)
	sb, err := sandbox.New(sandbox.Options{
		Faults:        sandbox.Faults{CommitThenFail: 0.3, Seed: 32},
		NotSearchable: []string{"content.external_id"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(sb)
	t.Cleanup(ss.Close)
	e := &e2e{t: t, bin: bin, farm: farm, farmURL: fs.URL, sb: sb, sbURL: ss.URL, dir: t.TempDir(), workers: 2}
	store := filepath.Join(e.dir, "store.db")
	admin := freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, `api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: sandbox
  client_secret: sandbox-secret
store:
  path: %s
http:
  min_interval: 200ms
publish:
  workers: 2
  claim_ttl: 2s
  shutdown_grace: 2s
  max_backoff: 1s
admin:
  listen: %q
log:
  level: debug
defaults:
  interval: 300ms
  initial_items: 1000
feeds:
`, ss.URL, ss.URL, store, admin)
	for i := range 4 {
		fmt.Fprintf(&b, "  - id: farm-%d\n    url: %s\n", i, feedfarm.URL(fs.URL, i))
	}
	cfg := filepath.Join(e.dir, "embedded.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	want := 4 * 30
	run := func(name string, n int) reconcileFigures {
		cmd := e.start(name, "run", "--config", cfg)
		waitFor(t, 90*time.Second, fmt.Sprintf("%d items on the API", n), func() bool { return len(sb.AllContent()) >= n })
		time.Sleep(time.Second)
		f := scrapeReconcile(t, admin)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v (log %s)", name, err, filepath.Join(e.dir, name+".log"))
		}
		return f
	}
	run("first", want)
	if err := os.Remove(store); err != nil {
		t.Fatal(err)
	}
	added, _ := farm.Change(1, 1)
	want += added
	f := run("second", want)
	e.assertExactlyOnce(want)
	checkLookups(t, f, true)
	if f.found < float64(4*30-added) {
		t.Errorf("%v items found on the API; want the %d published before (the oldest left the feeds)", f.found, 4*30-added)
	}
}

// TestStoreLossClusterNodeWiped (store loss c): one Redis Cluster master
// loses its data (FLUSHALL on that node) while a worker publishes. It runs
// against the cluster named by REDIS_CLUSTER_ADDRS (host:port,...; the
// test script starts one), and is skipped without it outside CI.
func TestStoreLossClusterNodeWiped(t *testing.T) {
	addrs := os.Getenv("REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDIS_CLUSTER_ADDRS is not set and CI=true")
		}
		t.Skip("REDIS_CLUSTER_ADDRS not set: no Redis Cluster to wipe a node of")
	}
	e := newE2E(t, feedfarm.Options{Feeds: 8, Items: 30, Seed: 41}, sandbox.Faults{CommitThenFail: 0.3, Latency: 15 * time.Millisecond, Seed: 42})
	e.workers = 2
	nodes := strings.Split(addrs, ",")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: nodes})
	t.Cleanup(func() {
		deleteClusterPrefix(t, cc, e.prefix)
		_ = cc.Close()
	})
	admin := freeAddr(t)
	cfg := e.config("cluster", admin)
	// The same config on the cluster: mode and seed addresses instead of
	// the single server's url.
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var seeds strings.Builder
	for _, a := range nodes {
		fmt.Fprintf(&seeds, "\n    - %s", a)
	}
	text := strings.Replace(string(raw), "  url: "+e.redisURL+"\n", "  mode: cluster\n  addrs:"+seeds.String()+"\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := e.start("cluster", "run", "--config", cfg)
	want := 8 * 30
	waitFor(t, 60*time.Second, "publishing to start", func() bool { return len(e.sb.AllContent()) > 40 })
	// Wipe the master of the first node's slots: its keys are gone, the
	// rest of the cluster keeps its own.
	node := redis.NewClient(&redis.Options{Addr: nodes[0]})
	defer node.Close()
	if err := node.FlushAll(context.Background()).Err(); err != nil {
		t.Fatalf("FLUSHALL on %s: %v", nodes[0], err)
	}
	wipedAt := len(e.sb.AllContent())
	t.Logf("node %s wiped with %d of %d items on the API", nodes[0], wipedAt, want)
	waitFor(t, 90*time.Second, fmt.Sprintf("%d items after the wipe", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	added, _ := e.farm.Change(1, 1)
	want += added
	waitFor(t, 60*time.Second, fmt.Sprintf("%d items after new ones", want), func() bool {
		return len(e.sb.AllContent()) >= want
	})
	time.Sleep(time.Second)
	f := scrapeReconcile(t, admin)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("worker after SIGTERM: %v (log %s)", err, filepath.Join(e.dir, "cluster.log"))
	}
	e.assertExactlyOnce(want)
	checkLookups(t, f, false)
}

// deleteClusterPrefix deletes the test's keys on every master.
func deleteClusterPrefix(t *testing.T, cc *redis.ClusterClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return dedupetest.DeletePrefix(ctx, c, prefix)
	})
	if err != nil {
		t.Errorf("clean up cluster keys %s*: %v", prefix, err)
	}
}
