package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// lossScenario is one feed's life around a store loss: 30 items, of which
// first sight publishes the 10 newest and records 20 as seen; then 5 new
// items are queued but not delivered when the store loses everything.
// After the loss, the same 35 items are accepted again: the 10 published
// must be recorded from the API (not posted), the 5 queued ones posted
// (they were lost with the outbox), the 20 old ones left unpublished.
type lossScenario struct {
	e     *env
	feed  string
	items []transform.Payload // newest first
	reg   *prometheus.Registry
}

func newLossScenario(e *env, feed string) *lossScenario {
	all := stories(feed, 35)
	return &lossScenario{e: e, feed: feed, items: all, reg: prometheus.NewPedanticRegistry()}
}

func (s *lossScenario) before(p *publish.Publisher) {
	s.e.t.Helper()
	old := s.items[5:]
	c := s.e.accept(p, s.feed, old, publish.FeedOptions{InitialItems: 10})
	if c.New != 10 || c.Seen != 20 {
		s.e.t.Fatalf("first sight = %+v; want 10 new, 20 seen", c)
	}
	s.e.runUntilEmpty(p, 20*time.Second)
	if c := s.e.accept(p, s.feed, s.items, publish.FeedOptions{InitialItems: 10}); c.New != 5 {
		s.e.t.Fatalf("second poll = %+v; want 5 new", c)
	}
}

func (s *lossScenario) after(p *publish.Publisher) {
	s.e.t.Helper()
	posts := s.e.log.count(http.MethodPost, "/v3/story")
	gets := s.e.log.count(http.MethodGet, "/v3/content")
	outcomes := []struct {
		outcome     string
		want, count float64
	}{{"found", 10, 0}, {"new", 5, 0}, {"seen", 20, 0}}
	for i, o := range outcomes {
		outcomes[i].count = metricValue(s.e.t.(*testing.T), s.reg, "feedworker_reconcile_items_total", map[string]string{"feed": s.feed, "outcome": o.outcome})
	}
	puts := s.e.log.count(http.MethodPut, "/v3/story/")
	// One published item was edited at the source meanwhile: its title on
	// the service tells, so it is updated.
	s.items[7].Title += " (edited while the store was lost)"
	s.items[7] = rehash(s.items[7])
	c := s.e.accept(p, s.feed, s.items, publish.FeedOptions{InitialItems: 10})
	if c.New != 5 || c.Seen != 20 || c.Duplicate != 9 || c.Updated != 1 {
		s.e.t.Errorf("after the loss = %+v; want 5 new, 20 seen, 9 duplicate (found on the API), 1 updated", c)
	}
	if n := s.e.log.count(http.MethodGet, "/v3/content") - gets; n != 1 {
		s.e.t.Errorf("%d look-ups for 35 items; want 1 (one GET per 100)", n)
	}
	s.e.runUntilEmpty(p, 20*time.Second)
	if n := s.e.log.count(http.MethodPost, "/v3/story") - posts; n != 5 {
		s.e.t.Errorf("%d POSTs after the loss; want 5 (the items lost with the outbox)", n)
	}
	if n := s.e.log.count(http.MethodPut, "/v3/story/") - puts; n != 1 {
		s.e.t.Errorf("%d PUTs after the loss; want 1 (the item edited meanwhile)", n)
	}
	s.e.exactlyOnce(s.items[:15])
	for _, o := range outcomes {
		got := metricValue(s.e.t.(*testing.T), s.reg, "feedworker_reconcile_items_total", map[string]string{"feed": s.feed, "outcome": o.outcome}) - o.count
		if got != o.want {
			s.e.t.Errorf("feedworker_reconcile_items_total{outcome=%q} grew by %v; want %v", o.outcome, got, o.want)
		}
	}
	// An edit after the loss is an update of the content found.
	puts = s.e.log.count(http.MethodPut, "/v3/story/")
	edited := s.items
	edited[12].Title += " (edited)"
	edited[12] = rehash(edited[12])
	if c := s.e.accept(p, s.feed, edited, publish.FeedOptions{InitialItems: 10}); c.Updated != 1 {
		s.e.t.Errorf("edit after the loss = %+v; want 1 updated", c)
	}
	s.e.runUntilEmpty(p, 20*time.Second)
	if n := s.e.log.count(http.MethodPut, "/v3/story/") - puts; n != 1 {
		s.e.t.Errorf("%d PUTs for the edit; want 1", n)
	}
	s.e.exactlyOnce(edited[:15])
}

// TestReconcileRedisEmptiedUnderAPublisher: Redis loses every key (as a
// FLUSHALL does) under a running publisher; the marker's change is
// noticed and nothing the API has is posted again.
func TestReconcileRedisEmptiedUnderAPublisher(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	s := newLossScenario(e, "flushed")
	p := e.publisher(func(o *publish.Options) { o.Registerer = s.reg; o.SendTimeout = 300 * time.Millisecond })
	s.before(p)
	if err := dedupetest.DeletePrefix(context.Background(), e.redis, e.prefix); err != nil {
		t.Fatal(err)
	}
	s.after(p)
	if got := metricValue(t, s.reg, "feedworker_reconcile_store_losses_total", nil); got != 2 {
		t.Errorf("store losses = %v; want 2 (the new store at start, the emptied one)", got)
	}
}

// TestReconcileBoltFileDeleted: the embedded store's file is deleted
// between two runs.
func TestReconcileBoltFileDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onBolt, sandbox.Faults{})
	path := filepath.Join(t.TempDir(), "worker.db")
	open := func() *dedupe.Bolt {
		st, err := dedupe.OpenBolt(path, dedupe.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.store = st
		return st
	}
	st := open()
	s := newLossScenario(e, "deleted")
	s.before(e.publisher(nil))
	st.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	defer open().Close()
	s.after(e.publisher(func(o *publish.Options) { o.Registerer = s.reg }))
}

// TestNewStoreFileIsNoWarning: the embedded store's first start says at
// INFO that its file is new, not the WARN of a store that lost its
// marker; the file reopened says nothing; a Redis prefix never written
// cannot be told from an emptied one and still warns.
func TestNewStoreFileIsNoWarning(t *testing.T) {
	t.Parallel()
	run := func(e *env) string {
		var logs bytes.Buffer
		p := e.publisher(func(o *publish.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		})
		e.accept(p, "f", stories("f", 2), publish.FeedOptions{})
		return logs.String()
	}
	const created, lost = "the store's file was created by this start", "the store has no epoch marker"
	e := newEnv(t, onBolt, sandbox.Faults{})
	path := filepath.Join(t.TempDir(), "worker.db")
	for i, want := range []string{created, ""} {
		st, err := dedupe.OpenBolt(path, dedupe.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.store = st
		logs := run(e)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs, "level=WARN") {
			t.Errorf("start %d warned:\n%s", i+1, logs)
		}
		if want != "" && (!strings.Contains(logs, "level=INFO msg=\""+want) || !strings.Contains(logs, path)) {
			t.Errorf("start %d: no INFO %q:\n%s", i+1, want, logs)
		}
		if want == "" && strings.Contains(logs, created) {
			t.Errorf("start %d, the file there already: %s", i+1, logs)
		}
	}
	if logs := run(newEnv(t, onRedis, sandbox.Faults{})); !strings.Contains(logs, "level=WARN msg=\""+lost) {
		t.Errorf("a new Redis prefix: no WARN %q:\n%s", lost, logs)
	}
}

// TestReconcileFilterRefused: on a service that does not search
// external_id, the look-up reads the content pages instead, once for the
// whole feed.
func TestReconcileFilterRefused(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, onRedis, sandbox.Faults{}, refuseExternalIDFilter)
	s := newLossScenario(e, "refused")
	p := e.publisher(func(o *publish.Options) { o.Registerer = s.reg; o.SendTimeout = 300 * time.Millisecond })
	s.before(p)
	if err := dedupetest.DeletePrefix(context.Background(), e.redis, e.prefix); err != nil {
		t.Fatal(err)
	}
	gets := e.log.count(http.MethodGet, "/v3/content")
	c := e.accept(p, s.feed, s.items, publish.FeedOptions{InitialItems: 10})
	if c.New != 5 || c.Seen != 20 {
		t.Errorf("after the loss = %+v; want 5 new, 20 seen", c)
	}
	// 15 items on the service: one page.
	if n := e.log.count(http.MethodGet, "/v3/content") - gets; n != 1 {
		t.Errorf("%d GETs; want 1 (one page scanned; the refused filter is not asked again)", n)
	}
	if got := metricValue(t, s.reg, "feedworker_reconcile_lookups_total", map[string]string{"kind": "scan"}); got < 1 {
		t.Errorf("scan look-ups = %v; want them counted", got)
	}
	e.runUntilEmpty(p, 20*time.Second)
	e.exactlyOnce(s.items[:15])
}

// TestReconcileBatchesOf100: 250 unknown items cost three GETs.
func TestReconcileBatchesOf100(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onBolt, sandbox.Faults{})
	items := stories("big", 250)
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) { o.Registerer = reg })
	e.accept(p, "big", items, publish.FeedOptions{InitialItems: 250})
	if n := e.log.count(http.MethodGet, "/v3/content"); n != 3 {
		t.Errorf("%d GETs for 250 items; want 3", n)
	}
	if got := metricValue(t, reg, "feedworker_reconcile_lookups_total", map[string]string{"kind": "filter"}); got != 3 {
		t.Errorf("filter look-ups = %v; want 3", got)
	}
	e.runUntilEmpty(p, 60*time.Second)
	e.exactlyOnce(items)
}

// TestReconcileKnownFeedAfterMarkerChange: only the marker changes (the
// records survive, as when a node holding it was wiped): a known feed
// looks up only the items it has no record of, once.
func TestReconcileKnownFeedAfterMarkerChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	reg := prometheus.NewPedanticRegistry()
	lost := make(chan struct{}, 1)
	p := e.publisher(func(o *publish.Options) {
		o.Registerer, o.SendTimeout, o.EpochInterval = reg, 200*time.Millisecond, 20*time.Millisecond
		o.OnStoreLoss = func() { lost <- struct{}{} }
	})
	items := stories("kept", 3)
	e.accept(p, "kept", items[1:], publish.FeedOptions{InitialItems: 10})
	e.runUntilEmpty(p, 20*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.WatchStore(ctx)
	// Losing one partition's part of the marker (as a wiped Cluster node
	// would) is a loss of the store.
	marks, err := e.redis.Keys(context.Background(), e.prefix+"*epoch").Result()
	if err != nil || len(marks) == 0 {
		t.Fatalf("epoch marker keys: %v, %v", marks, err)
	}
	if err := e.redis.Del(context.Background(), marks[len(marks)/2]).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher did not notice the marker's change")
	}
	if got := metricValue(t, reg, "feedworker_reconcile_store_losses_total", nil); got != 2 {
		t.Errorf("store losses = %v; want 2", got)
	}
	gets := e.log.count(http.MethodGet, "/v3/content")
	if c := e.accept(p, "kept", items, publish.FeedOptions{InitialItems: 10}); c.New != 1 {
		t.Errorf("counts = %+v; want 1 new", c)
	}
	if n := e.log.count(http.MethodGet, "/v3/content") - gets; n != 1 {
		t.Errorf("%d GETs; want 1 for the one unknown item", n)
	}
	more := append([]transform.Payload{story("kept", 9, "later", day0.Add(48*time.Hour))}, items...)
	gets = e.log.count(http.MethodGet, "/v3/content")
	e.accept(p, "kept", more, publish.FeedOptions{InitialItems: 10})
	if n := e.log.count(http.MethodGet, "/v3/content") - gets; n != 0 {
		t.Errorf("%d GETs after the feed's full pass; want 0 (reconcile mode ended)", n)
	}
	e.runUntilEmpty(p, 20*time.Second)
	e.exactlyOnce(more)
}

// TestReconcileCost measures what a reconcile costs: GETs per item and
// time, for 20 feeds of 50 items found on the API.
func TestReconcileCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	p := e.publisher(func(o *publish.Options) { o.SendTimeout = 100 * time.Millisecond })
	const feeds, per = 20, 50
	for f := range feeds {
		e.accept(p, fmt.Sprint("cost", f), stories(fmt.Sprint("cost", f), per), publish.FeedOptions{InitialItems: per})
	}
	e.runUntilEmpty(p, 60*time.Second)
	if err := dedupetest.DeletePrefix(context.Background(), e.redis, e.prefix); err != nil {
		t.Fatal(err)
	}
	gets, posts := e.log.count(http.MethodGet, "/v3/content"), e.log.count(http.MethodPost, "/v3/")
	start := time.Now()
	for f := range feeds {
		if c := e.accept(p, fmt.Sprint("cost", f), stories(fmt.Sprint("cost", f), per), publish.FeedOptions{InitialItems: per}); c.New != 0 {
			t.Errorf("feed %d: %+v; want nothing new", f, c)
		}
	}
	took := time.Since(start)
	n := e.log.count(http.MethodGet, "/v3/content") - gets
	if n != feeds {
		t.Errorf("%d GETs for %d feeds of %d; want one per feed", n, feeds, per)
	}
	if p := e.log.count(http.MethodPost, "/v3/") - posts; p != 0 {
		t.Errorf("%d POSTs after the loss; want 0", p)
	}
	t.Logf("reconcile of %d items in %d feeds: %d GETs (%.3f per item), %v (%v per feed, the first one waiting the send timeout)",
		feeds*per, feeds, n, float64(n)/float64(feeds*per), took.Round(time.Millisecond), (took / feeds).Round(time.Microsecond))
}
