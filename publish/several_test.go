package publish_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// TestSeveralPublishers runs three publishers (as three replicas would) on
// one Redis prefix and one sandbox that fails some writes after applying
// them. Every replica accepts every feed, the worst case a lapsed lease
// allows: each item still appears exactly once.
func TestSeveralPublishers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{CommitThenFail: 0.3, Seed: 7, Latency: 2 * time.Millisecond})
	var pubs []*publish.Publisher
	for i := range 3 {
		pubs = append(pubs, e.publisher(func(o *publish.Options) { o.Owner = fmt.Sprint("replica", i); o.Workers = 3 }))
	}
	feeds := map[string][]transform.Payload{}
	for _, f := range []string{"a", "b", "c", "d"} {
		feeds[f] = stories(f, 10)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Go(func() { p.Run(ctx) })
	}
	var accepts sync.WaitGroup
	for _, p := range pubs {
		accepts.Go(func() {
			for f, items := range feeds {
				if _, err := p.Accept(ctx, f, items, dedupe.Validators{}, publish.FeedOptions{InitialItems: 100}); err != nil {
					t.Errorf("Accept(%s): %v", f, err)
				}
			}
		})
	}
	accepts.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := pubs[0].Stats(ctx)
		if err == nil && st.Outbox == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox not drained: %+v, %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	e.exactlyOnce(feeds["a"], feeds["b"], feeds["c"], feeds["d"])
}

// TestMetrics checks the publisher's metrics on a pedantic registry, and
// that the worker's outcomes (filtered, failed) land in the publisher's
// feedworker_items_total through CountItems.
func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) { o.Registerer = reg })
	p.CountItems("m", "filtered", 2)
	p.CountItems("m", "failed", 0) // no series for nothing counted

	items := stories("m", 3)
	e.accept(p, "m", items[:2], publish.FeedOptions{InitialItems: 1})
	e.accept(p, "m", items, publish.FeedOptions{InitialItems: 1})
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP feedworker_items_total Feed items by outcome: seen (recorded without publishing), new, duplicate, updated, filtered, failed.
# TYPE feedworker_items_total counter
feedworker_items_total{feed="m",outcome="duplicate"} 2
feedworker_items_total{feed="m",outcome="filtered"} 2
feedworker_items_total{feed="m",outcome="new"} 2
feedworker_items_total{feed="m",outcome="seen"} 1
# HELP feedworker_publish_requests_total Deliveries to the API by content type and outcome: created, updated, recovered, retry, dead_letter, removed, deleted.
# TYPE feedworker_publish_requests_total counter
feedworker_publish_requests_total{outcome="created",type="story"} 2
# HELP feedworker_outbox_depth Items queued for delivery, due or waiting for a retry.
# TYPE feedworker_outbox_depth gauge
feedworker_outbox_depth 0
# HELP feedworker_dead_letters Items whose delivery failed permanently, waiting for feedworker deadletters retry.
# TYPE feedworker_dead_letters gauge
feedworker_dead_letters 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"feedworker_items_total", "feedworker_publish_requests_total", "feedworker_outbox_depth", "feedworker_dead_letters"); err != nil {
		t.Error(err)
	}
	observed := storeOpsTimed(t, reg)
	for _, op := range []string{"diff", "commit", "claim", "settle_later", "stats"} {
		if observed[op] == 0 {
			t.Errorf("no store duration observed for op %q (got %v)", op, observed)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "feedworker_store_errors_total"); err != nil || n != 0 {
		t.Errorf("store errors series = %d, %v; want none", n, err)
	}
}
