package publish

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// Outcomes handed over. On a store that can hold outcomes a few
// milliseconds for company (dedupe.LaterClaimBatcher: the embedded store,
// where every write costs a commit and its fsyncs; Redis, where each costs
// a round trip), a sender does not wait for its outcome to be recorded: it
// hands the outcome over and takes its next item. The store applies it
// within milliseconds: bbolt in the transaction of its next write (usually
// the next claim, which the sender's freed slot brings about), Redis in
// one pipeline with the others handed over meanwhile. Exactly-once holds
// as when the sender waits:
//
//   - until the outcome is durable, the item's claim and the pending mark
//     its claim set stay in the store: nobody else claims it, and a claim
//     that lapsed meanwhile makes the outcome record only the content id
//     (as for a sender that waited too long);
//   - nothing reports the outcome before it is durable: the request
//     counter, the observer (history), the log and the backlog hear of it
//     from the callback that runs after the commit;
//   - a crash before the commit is the crash after a send the protocol
//     already covers: the claim lapses, and the mark makes the next holder
//     look the item up before sending;
//   - the delivery loop ends (a shutdown, the end of a drain) only once
//     every outcome handed over is recorded or given up on, and a drain
//     counts outcomes not yet recorded as items in flight.
type handover struct {
	in chan *storeReq
	// pending counts outcomes handed over and not recorded (or given up
	// on) yet; outstanding is the same count, for a stop to wait on.
	pending     atomic.Int64
	outstanding sync.WaitGroup
	// finished is the delivery loop's: told each time an outcome is
	// recorded, for a drain waiting for the items in flight.
	finished chan<- struct{}
	// retries are outcomes whose recording failed, retried as a waiting
	// sender would (settle).
	retries sync.WaitGroup
	// wake: each outcome recorded wakes the claimer (see handOver); not
	// in a drain, which claims again once those in flight are recorded.
	wake bool
}

// maxLaterBatches bounds the batches of outcomes the store holds at once;
// past it, the hand-over waits (the channel fills, and then senders wait).
const maxLaterBatches = 4

// startHandover starts recording outcomes handed over on lb. The
// delivery loop's stop waits for them under the shutdown grace (wait);
// the stop returned here comes after that, and ends the flusher.
func (p *Publisher) startHandover(lb dedupe.LaterClaimBatcher, buffer int, finished chan<- struct{}, wake bool) (h *handover, stop func()) {
	h = &handover{in: make(chan *storeReq, buffer), finished: finished, wake: wake}
	flushed := make(chan struct{})
	go func() { defer close(flushed); p.flushLater(lb, h.in) }()
	return h, func() {
		close(h.in)
		<-flushed
		h.retries.Wait()
	}
}

// wait returns once every outcome handed over is recorded or given up
// on. Only after the senders stopped: nothing is handed over meanwhile.
func (h *handover) wait() {
	if h != nil {
		h.outstanding.Wait()
	}
}

// idle reports whether every outcome handed over is recorded.
func (h *handover) idle() bool { return h == nil || h.pending.Load() == 0 }

// inFlight is the outcomes handed over and not recorded yet.
func (h *handover) inFlight() int {
	if h == nil {
		return 0
	}
	return int(h.pending.Load())
}

// done counts one outcome out and wakes a drain waiting for it.
func (h *handover) done() {
	h.pending.Add(-1)
	h.outstanding.Done()
	select {
	case h.finished <- struct{}{}:
	default:
	}
}

// flushLater records outcomes handed over, as flushOps does, but without
// making anyone wait: up to maxLaterBatches batches are held by the store
// at once, for company (ClaimOpsLater).
func (p *Publisher) flushLater(lb dedupe.LaterClaimBatcher, in <-chan *storeReq) {
	sem := make(chan struct{}, maxLaterBatches)
	var wg sync.WaitGroup
	for first := range in {
		batch, ops := gatherOps(first, in)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// Outcomes are recorded even during a shutdown: the API
			// already acted on them.
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			res := lb.ClaimOpsLater(ctx, ops, time.Now())
			cancel()
			for _, r := range batch {
				r.res, res = res[:len(r.ops)], res[len(r.ops):]
				r.then(r.res)
			}
		})
	}
	wg.Wait()
}

// settleOrHandOver records an outcome that reports nothing (an item given
// back): handed over when h is set, else waited for.
func (p *Publisher) settleOrHandOver(hard context.Context, log *slog.Logger, j job, s dedupe.Settlement, ops chan<- *storeReq, h *handover) {
	if h == nil {
		p.settle(hard, log, j, s, ops, nil)
		return
	}
	p.handOver(hard, log, j, s, ops, h, nil)
}

// handOver hands outcome s of job j to be recorded, and returns; after,
// when set, runs once it is recorded, and never if it is not. An outcome
// whose recording fails is retried as settle retries it, with the
// sender's ops.
func (p *Publisher) handOver(hard context.Context, log *slog.Logger, j job, s dedupe.Settlement, ops chan<- *storeReq, h *handover, after func()) {
	h.pending.Add(1)
	h.outstanding.Add(1)
	finish := func(recorded bool) {
		if recorded && after != nil {
			after()
		}
		// Counted out either way: one not recorded is in the outbox,
		// pending, for a drain to count as the store says.
		h.done()
	}
	start := time.Now()
	r := &storeReq{ops: []dedupe.ClaimOp{{Key: j.Key, Owner: j.owner, Settle: &s}}}
	r.then = func(res []dedupe.ClaimResult) {
		// Not op "settle", a sender's wait for its write: this is the
		// hand-over's, its queue and the store's linger included.
		p.storeDone("settle_later", start, res[0].Err)
		if res[0].Err != nil {
			h.retries.Go(func() { finish(p.settle(hard, log, j, s, ops, nil)) })
			return
		}
		p.recorded(log, s, res[0].Held)
		if h.wake {
			// The sender freed its slot before this outcome was recorded,
			// so the claim that brought about may have run first: one that left the
			// item due (edited meanwhile, given back) is found now, not
			// at the next poll.
			p.wake()
		}
		finish(true)
	}
	// Room in the hand-over wins over a grace that is over: the flusher
	// records on its own context, as the API already acted on the outcome;
	// a select with both ready would give up half of them at random.
	select {
	case h.in <- r:
		return
	default:
	}
	select {
	case h.in <- r:
	case <-hard.Done():
		// The store is so far behind that the hand-over is full, and the
		// shutdown grace is over: as for an outcome whose recording
		// failed, the claim lapses and the pending mark makes the next
		// holder look the item up.
		log.Error("recording a delivery failed; the item will be looked up before it is sent again",
			"cause", fmt.Errorf("outcome not handed over to the store: %w", context.Cause(hard)))
		finish(false)
	}
}
