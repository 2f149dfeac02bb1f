package publish

import (
	"context"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// statsCoalesce is the least time between two refreshes of the outbox
// gauges that changes trigger: a burst of deliveries costs one count
// of the store, and a gauge lags a change by at most this much.
const statsCoalesce = 250 * time.Millisecond

// statsChanged says the outbox or the dead letters changed (items queued,
// delivered, dead-lettered or retried): the gauges derived from the store
// are refreshed soon, not only at the next StatsInterval, so that
// feedworker_dead_letters agrees with the status page.
func (p *Publisher) statsChanged() {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	if p.statsPending {
		return
	}
	p.statsPending = true
	p.statsRefreshing.Add(1)
	wait := max(statsCoalesce-time.Since(p.lastStats), 0)
	time.AfterFunc(wait, func() {
		defer p.statsRefreshing.Done()
		p.statsMu.Lock()
		p.statsPending = false
		p.statsMu.Unlock()
		// Detached from any caller: the refresh outlives the delivery that
		// asked for it, and is bounded on its own.
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		// A failure is not logged here: the refresh may outlive the
		// publisher's store, and Run's periodic refresh reports failures.
		_, _ = p.Stats(ctx)
	})
}

// settledChanges reports whether a settlement changes what the gauges count.
func settledChanges(k dedupe.SettleKind) bool {
	return k == dedupe.Delivered || k == dedupe.Dead || k == dedupe.Removed
}
