package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// TestGaugesFollowChanges: with the periodic refresh an hour away, the
// dead-letter and outbox gauges still follow what Run does: nothing reads
// the stats here but the gauges' own refresh.
func TestGaugesFollowChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	reg := prometheus.NewPedanticRegistry()
	p := e.publisher(func(o *publish.Options) { o.Registerer = reg; o.StatsInterval = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	items := stories("gauges", 3)
	// Segment 1 does not exist: the sandbox answers 400, a dead letter.
	for _, i := range []int{1, 2} {
		items[i].Segments = []int64{1}
		items[i] = rehash(items[i])
	}
	e.accept(p, "gauges", items, publish.FeedOptions{InitialItems: 100})
	waitFor(t, 20*time.Second, "feedworker_dead_letters 2 and feedworker_outbox_depth 0", func() bool {
		return metricValue(t, reg, "feedworker_dead_letters", nil) == 2 && metricValue(t, reg, "feedworker_outbox_depth", nil) == 0
	})
}
