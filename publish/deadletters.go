package publish

import (
	"context"
	"fmt"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// DeadLetter is an item whose delivery failed permanently, for
// `feedworker deadletters list`.
type DeadLetter struct {
	// ID is what RetryDeadLetter takes: "feed/external_id".
	ID         string
	FeedID     string
	ExternalID string
	Type       string
	Title      string
	// Status is the API's HTTP status (0 when it did not answer) and
	// Reason its explanation.
	Status   int
	Reason   string
	Attempts int
	At       time.Time
}

// DeadLetters lists the dead letters, oldest first.
func (p *Publisher) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	var dl []dedupe.DeadLetter
	err := p.storeOp(ctx, "dead_letters", func(ctx context.Context) (err error) {
		dl, err = p.store.DeadLetters(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(dl))
	for _, d := range dl {
		x := DeadLetter{ID: d.ID, FeedID: d.Key.FeedID, ExternalID: d.Key.ExternalID, Status: d.Status, Reason: d.Reason, Attempts: d.Attempts, At: d.At}
		var env envelope
		if decodeEnvelope(string(d.Data), &env) == nil {
			x.Type, x.Title = env.Payload.Type, env.Payload.Title
		}
		out = append(out, x)
	}
	p.m.deadLetters.Set(float64(len(dl)))
	return out, nil
}

// RetryDeadLetter queues one dead letter again, due now; ErrNotFound when
// id names none.
func (p *Publisher) RetryDeadLetter(ctx context.Context, id string) error {
	var ok bool
	err := p.storeOp(ctx, "retry_dead_letter", func(ctx context.Context) (err error) {
		ok, err = p.store.RetryDeadLetter(ctx, id, time.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("retry dead letter %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("retry dead letter %s: %w", id, ErrNotFound)
	}
	p.wake()
	p.statsChanged()
	return nil
}

// RetryDeadLetters queues every dead letter again and returns how many.
func (p *Publisher) RetryDeadLetters(ctx context.Context) (int, error) {
	var n int
	err := p.storeOp(ctx, "retry_dead_letter", func(ctx context.Context) (err error) {
		n, err = p.store.RetryDeadLetters(ctx, time.Now())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead letters: %w", err)
	}
	if n > 0 {
		p.wake()
		p.statsChanged()
	}
	return n, nil
}

// Stats counts the outbox and the dead letters, for the status page, and
// updates the outbox gauges.
func (p *Publisher) Stats(ctx context.Context) (dedupe.Stats, error) {
	var s dedupe.Stats
	err := p.storeOp(ctx, "stats", func(ctx context.Context) (err error) {
		s, err = p.store.Stats(ctx, time.Now())
		return err
	})
	if err != nil {
		return dedupe.Stats{}, fmt.Errorf("outbox stats: %w", err)
	}
	p.m.outboxDepth.Set(float64(s.Outbox))
	p.backlog.atMost(s.Outbox)
	p.m.deadLetters.Set(float64(s.DeadLetters))
	p.statsMu.Lock()
	p.lastStats = time.Now()
	p.deadLetters = s.DeadLetters
	p.statsMu.Unlock()
	return s, nil
}

func (p *Publisher) refreshStats(ctx context.Context) {
	if _, err := p.Stats(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("refreshing outbox gauges failed", "cause", err)
	}
}

// maybeRefreshStats keeps the gauges fresh while Run works, at most once
// per StatsInterval.
func (p *Publisher) maybeRefreshStats(ctx context.Context) {
	p.statsMu.Lock()
	due := time.Since(p.lastStats) >= p.o.StatsInterval
	p.statsMu.Unlock()
	if due {
		p.refreshStats(ctx)
	}
}
