package publish

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// settleTimeout bounds how long a worker keeps trying to record an outcome
// (through a store outage, say). Past it, the claim expires and the pending
// mark makes the next attempt look the item up instead of posting again.
const settleTimeout = 15 * time.Second

// Run delivers the outbox until ctx is cancelled, then shuts down in two
// phases: it stops claiming items, and lets sends in flight finish within
// ShutdownGrace, because cancelling a POST halfway is how duplicates are
// born. Store failures are retried with backoff; Run resumes by itself.
// It returns nil after a shutdown.
func (p *Publisher) Run(ctx context.Context) error {
	_ = p.loop(ctx, false, nil) // Run never gives up on the store
	return nil
}

// Drain delivers every item due now, and items that become due while it
// runs (an update queued behind a create), then returns. Items waiting for
// a retry later stay queued. It returns ctx's error if cancelled first, and
// the store's error if the store stays unreachable for a second or two.
func (p *Publisher) Drain(ctx context.Context) error {
	return p.DrainWhile(ctx, nil)
}

// DrainWhile is Drain for a pass that is still queueing items: it delivers
// what is due and what Accept queues meanwhile, and returns once more is
// closed and nothing due is left. `feedworker once` runs it beside its
// polls, so that delivery starts with the first feed rather than after the
// last. While more is open it does not give up on the store: the polls
// decide whether the pass failed. A nil more is Drain.
func (p *Publisher) DrainWhile(ctx context.Context, more <-chan struct{}) error {
	if err := p.loop(ctx, true, more); err != nil {
		return fmt.Errorf("drain outbox: %w", err)
	}
	p.refreshStats(context.WithoutCancel(ctx))
	return ctx.Err()
}

// maxStoreDown caps the wait between claims while the store fails; a
// drain gives up once the wait reaches drainGiveUp (after about 1.5s of
// failures), so `feedworker once` reports the outage instead of hanging.
const (
	maxStoreDown = 5 * time.Second
	drainGiveUp  = time.Second
)

func (p *Publisher) loop(ctx context.Context, drain bool, more <-chan struct{}) error {
	p.backlog.running(1)
	defer p.backlog.running(-1)
	// Sends run on hard, which outlives ctx by the grace period.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	if hb := p.heartbeats(); hb != nil {
		// The heartbeat outlives every send: it stops after them (this
		// defer runs after stop's), and then the process leaves.
		hbCtx, hbCancel := context.WithCancel(context.WithoutCancel(ctx))
		p.beat(hbCtx, hb)
		hbDone := make(chan struct{})
		go func() { defer close(hbDone); p.runHeartbeat(hbCtx, hb) }()
		defer func() {
			hbCancel()
			<-hbDone
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := hb.OwnerLeave(lctx, p.o.Owner); err != nil {
				p.log.Warn("could not remove this worker's heartbeat", "cause", err)
			}
		}()
	}
	w := p.o.Workers
	// Up to two batches of items are claimed at once: one being sent by
	// the w senders, and the next waiting for a sender, so that a claim
	// takes a whole batch in one round trip while every sender stays busy.
	// A slot is held from the claim until the outcome is recorded.
	slots := make(chan struct{}, 2*w)
	finished := make(chan struct{}, 2*w)
	var ops chan *storeReq
	if cb, ok := p.store.(dedupe.ClaimBatcher); ok {
		ops = make(chan *storeReq, 4*w)
		flushed := make(chan struct{})
		go func() { defer close(flushed); p.flushOps(cb, ops) }()
		// Every delivery has finished (stop) before this runs.
		defer func() { close(ops); <-flushed }()
	}
	// On a store that holds outcomes for company (its next write on bbolt,
	// a shared pipeline on Redis), senders hand them over and go on (see
	// handover.go). Stopped before ops: an outcome
	// whose recording failed is retried through ops.
	var h *handover
	if lb, ok := p.store.(dedupe.LaterClaimBatcher); ok && ops != nil {
		var stopHandover func()
		h, stopHandover = p.startHandover(lb, 4*w, finished, !drain)
		defer stopHandover()
	}
	// The senders live as long as the loop: a goroutine per item would
	// grow a fresh stack for every delivery (JSON is deep).
	work := make(chan job, 2*w)
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			// next is a job this sender took early, to check its claim in
			// the round trip that records the previous outcome.
			var next *job
			for {
				var j job
				if next != nil {
					j, next = *next, nil
				} else {
					var ok bool
					if j, ok = <-work; !ok {
						return
					}
				}
				next = p.deliver(ctx, hard, j, ops, h, work)
				<-slots
				select {
				case finished <- struct{}{}:
				default:
				}
			}
		})
	}
	// stop is the shutdown: nothing more is queued; items not sent yet are
	// given back (deliver sees ctx done), those in flight get the grace.
	// Outcomes handed over count as sends in flight: their retries
	// through a store outage run on hard, which the grace ends.
	stop := func() {
		close(work)
		p.wait(func() { wg.Wait(); h.wait() }, hardCancel, h)
	}
	var storeDown time.Duration
	var timer *time.Timer
	// sleep waits d at most; it reports whether extra woke it.
	sleep := func(d time.Duration, extra, extra2 <-chan struct{}) (byExtra bool) {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
			return false
		case <-p.wakeCh:
		case <-extra:
			byExtra = true
		case <-extra2:
		}
		timer.Stop()
		return byExtra
	}

	// retryOwner is the owner of a claim call that failed: its answer may
	// have been lost after the store took the items, and the retry under
	// the same owner takes them again (see dedupe.Store.Claim).
	var retryOwner string
	for ctx.Err() == nil {
		if err := p.gate.wait(ctx); err != nil {
			break
		}
		if h := p.o.Health; h != nil && !drain && !h.Up() {
			// Nothing is claimed while the store is down: the health's
			// probe finds it back, and no claim fails once per interval.
			if err := h.Wait(ctx); err != nil {
				break
			}
			storeDown = 0
		}
		// Claim what the free slots allow: a batch for the senders and
		// at most one more waiting, so that no claim ages in a queue.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		n := 1
	more:
		for n < 2*w {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
	batch:
		// While a whole batch still waits for the senders, wait for more
		// free slots so that the claim takes a batch.
		for n < w && len(slots)-n >= w {
			select {
			case slots <- struct{}{}:
				n++
			case <-ctx.Done():
				break batch
			}
		}
		if ctx.Err() != nil {
			for range n {
				<-slots
			}
			continue
		}
		// Items in flight now may make themselves due again (an update
		// queued behind a create); a drain may end only after a claim that
		// began with none in flight found nothing. An outcome handed over
		// and not recorded yet is in flight.
		inFlight := len(slots) - n + h.inFlight()
		var claimed []dedupe.Claimed
		var next time.Time
		// The claim runs on the store's clock from some time after at, so
		// it lasts at least until at + ClaimTTL on ours.
		at, owner := time.Now(), retryOwner
		if owner == "" {
			owner = p.claimOwner()
		}
		err := p.storeOp(ctx, "claim", func(ctx context.Context) (err error) {
			if !p.alive() && (!p.beat(ctx, p.heartbeats()) || !p.alive()) {
				// Claiming without a heartbeat would let another worker
				// take the items while this one sends them.
				return errNoHeartbeat
			}
			claimed, next, err = p.store.Claim(ctx, owner, n, p.o.ClaimTTL, at)
			return err
		})
		for range n - len(claimed) {
			<-slots
		}
		retryOwner = ""
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			retryOwner = owner
			if drain && more == nil && storeDown >= drainGiveUp {
				stop()
				return err
			}
			storeDown = min(max(2*storeDown, 50*time.Millisecond), maxStoreDown)
			p.log.Warn("outbox claim failed; retrying", "cause", err, "retry_in", storeDown)
			sleep(storeDown, nil, more)
			more = stillOpen(more)
			continue
		}
		if storeDown > 0 {
			p.log.Info("store reachable again; delivering")
			storeDown = 0
		}
		for _, c := range claimed {
			work <- job{Claimed: c, owner: owner, at: at} // never blocks: work holds as many as there are slots
		}
		p.maybeRefreshStats(ctx)
		p.maybeRequeueRefusals(ctx)
		if len(claimed) > 0 {
			continue
		}
		if drain && inFlight == 0 && more == nil && !p.retrySoon(next) {
			stop()
			return nil
		}
		wait := p.o.PollInterval
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		// In a drain, a finishing item may have made another due (an
		// update queued behind its create): look again once the items in
		// flight have finished (not after each, a claim per item), or at
		// once when new items are accepted.
		var extra <-chan struct{}
		if drain {
			extra = finished
		}
		for {
			byFinish := sleep(wait, extra, more)
			more = stillOpen(more)
			if !byFinish || (len(slots) == 0 && h.idle()) || ctx.Err() != nil {
				break
			}
		}
	}

	stop()
	return nil
}

// drainRetryHorizon is how far ahead a drain waits for a retry: the
// transient failures of its own pass (first retried within a second,
// backing off from there), so that a pass over a service failing now and
// then leaves nothing queued, while an item failing for longer, or a
// service failing as a whole for longer than drainOutageWait, does not
// hold the drain.
const drainRetryHorizon = 10 * time.Second

// drainOutageWait is how long a drain waits for a service failing as a
// whole (the circuit open) before it ends with items queued: a short
// outage in the middle of a pass is ridden out, a long one is reported.
const drainOutageWait = time.Minute

// retrySoon reports whether a drain should wait for an item due at next.
func (p *Publisher) retrySoon(next time.Time) bool {
	if next.IsZero() || time.Until(next) > drainRetryHorizon {
		return false
	}
	opened := p.gate.state().OpenedAt
	return opened.IsZero() || time.Since(opened) < drainOutageWait
}

// stillOpen returns ch, or nil once ch is closed (a nil channel blocks a
// select forever, so a closed one stops waking it).
func stillOpen(ch <-chan struct{}) <-chan struct{} {
	select {
	case <-ch:
		return nil
	default:
		return ch
	}
}

// wait is the shutdown's phase two: nothing new is claimed; sends in
// flight, and outcomes handed over (h) not recorded yet, get the grace
// period, then their contexts are cancelled. inFlight returns once all
// are done.
func (p *Publisher) wait(inFlight func(), hardCancel context.CancelFunc, h *handover) {
	done := make(chan struct{})
	go func() { inFlight(); close(done) }()
	grace := time.NewTimer(p.o.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		p.log.Warn("shutdown grace period over; cancelling sends in flight", "grace", p.o.ShutdownGrace)
		if n := h.inFlight(); n > 0 {
			// Sent, not recorded (the store failing): each is left as
			// a crash after its send, its claim to lapse and its
			// pending mark to make the next holder look it up first.
			p.log.Warn("shutdown grace period over with outcomes not recorded yet; recording them is given up on once the current attempt ends, and their items are looked up before they are sent again", "outcomes", n)
		}
		hardCancel()
		<-done
	}
}

// job is one claimed entry on its way to a sender.
type job struct {
	dedupe.Claimed
	// owner is the claim's owner string, unique to the claim call, so that
	// a claim that lapsed and was taken again by this same process is not
	// mistaken for the new one.
	owner string
	// at is when the claim was asked for, or last renewed: it holds at
	// least until at + ClaimTTL.
	at time.Time
	// renewal, when set, is the check of the claim made at at, in the
	// round trip of the previous delivery's outcome (see deliver); unset,
	// the claim made at at is the last check.
	renewal *dedupe.Renewal
}

// claimOwner names the claims of one claim call: the process's owner and a
// sequence number.
func (p *Publisher) claimOwner() string {
	return fmt.Sprintf("%s#%d", p.o.Owner, p.claimSeq.Add(1))
}

// claimWait is how long a claimed item may wait, for a sender or for the
// API's Retry-After, before the check that precedes its send: half the
// claim's life, so the check (which extends the claim) comes well before
// the claim could lapse and another worker take the item.
func (p *Publisher) claimWait() time.Duration { return p.o.ClaimTTL / 2 }

// checkFresh is how recent the last check of a claim must be to stand for
// one made right before the send. The claim itself is such a check: it
// was just taken, under an owner no other claim has, with a whole TTL,
// and it read the record. Anything that waited longer (for a sender, for
// a Retry-After, on category resolution) is checked again, since a claim
// may be lost before its TTL (an eviction, a failover) and the record may
// have moved.
func (p *Publisher) checkFresh() time.Duration { return min(250*time.Millisecond, p.o.ClaimTTL/8) }

// release gives a claim back without sending, due at next (zero: where it
// was). The pending mark this claim set goes; one found by the claim stays.
func release(j job, next time.Time) dedupe.Settlement {
	return dedupe.Settlement{Kind: dedupe.Release, Next: next, Ambiguous: j.Record.PendingHash != ""}
}

// Outcomes of an attempt that sent nothing and count no request.
const (
	outcomeLost     = "lost"     // the claim lapsed: another worker owns the item now
	outcomeReleased = "released" // given back, to be sent later
)

// result is what one delivery attempt came to.
type result struct {
	s       dedupe.Settlement
	outcome string // publish_requests_total outcome, or outcomeLost or outcomeReleased
	typ     string
	err     error
}
