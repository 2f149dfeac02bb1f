package publish

import (
	"context"
	"strings"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// undecodableReason starts the reason of a dead letter made of an outbox
// entry its worker could not read. Workers before outbox version 2 wrote
// the same words, which is what lets maybeRequeueRefusals find theirs.
const undecodableReason = "undecodable outbox entry"

// refusalWindow is how long after its start a worker looks for them: a
// rolling upgrade retires the old replicas within minutes, and listing
// every dead letter with its entry is not free where the API keeps
// refusing items for good.
const refusalWindow = 30 * time.Minute

// maybeRequeueRefusals queues again the dead letters that a worker of an
// older version made of entries it could not read but this one can:
// during a rolling upgrade an old replica claims a version 2 entry,
// cannot read it, and dead-letters it without sending anything. Once this
// version sees them they are delivered as usual (an old replica still
// running may refuse one again; the next look re-queues it). The delivery
// loop calls it on each turn; it looks at once, then every StatsInterval,
// on a clock of its own (the gauges' refresh is reset by every Stats
// call), while any dead letter is known, and only in the refusalWindow
// after the publisher was made.
func (p *Publisher) maybeRequeueRefusals(ctx context.Context) {
	now := time.Now()
	p.statsMu.Lock()
	look := now.Sub(p.born) <= refusalWindow && p.deadLetters != 0 && now.Sub(p.lastRefusalLook) >= p.o.StatsInterval
	if look {
		p.lastRefusalLook = now
	}
	p.statsMu.Unlock()
	if !look {
		return
	}
	var dl []dedupe.DeadLetter
	err := p.storeOp(ctx, "dead_letters", func(ctx context.Context) (err error) {
		dl, err = p.store.DeadLetters(ctx)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("looking for dead letters an older version could not read failed", "cause", err)
		}
		return
	}
	n := 0
	for _, d := range dl {
		if !strings.HasPrefix(d.Reason, undecodableReason) {
			continue
		}
		var env envelope
		if decodeEnvelope(string(d.Data), &env) != nil {
			continue // unreadable here too: a newer version's, or damaged
		}
		if err := p.RetryDeadLetter(ctx, d.ID); err != nil {
			p.log.Warn("re-queueing a dead letter an older version could not read failed", "id", d.ID, "cause", err)
			continue
		}
		n++
	}
	if n > 0 {
		p.log.Info("re-queued dead letters an older version could not read (a rolling upgrade)", "items", n)
	}
}
