package publish

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
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
	// Sends run on hard, which outlives ctx by the grace period.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
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
				next = p.deliver(ctx, hard, j, ops, work)
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
	stop := func() {
		close(work)
		p.wait(&wg, hardCancel)
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

	for ctx.Err() == nil {
		if err := p.gate.wait(ctx); err != nil {
			break
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
		// began with none in flight found nothing.
		inFlight := len(slots) - n
		var claimed []dedupe.Claimed
		var next time.Time
		// The claim runs on the store's clock from some time after at, so
		// it lasts at least until at + ClaimTTL on ours.
		at, owner := time.Now(), p.claimOwner()
		err := p.storeOp(ctx, "claim", func(ctx context.Context) (err error) {
			claimed, next, err = p.store.Claim(ctx, owner, n, p.o.ClaimTTL, at)
			return err
		})
		for range n - len(claimed) {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
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
		if len(claimed) > 0 {
			continue
		}
		if drain && inFlight == 0 && more == nil {
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
			if !byFinish || len(slots) == 0 || ctx.Err() != nil {
				break
			}
		}
	}

	stop()
	return nil
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
// flight get the grace period, then their contexts are cancelled.
func (p *Publisher) wait(wg *sync.WaitGroup, hardCancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := time.NewTimer(p.o.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		p.log.Warn("shutdown grace period over; cancelling sends in flight", "grace", p.o.ShutdownGrace)
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

// deliver runs one claimed item: wait for the API if it asked to, check
// the claim, send, then record the outcome, together with other
// deliveries' store operations when ops is not nil. It may take the next
// job from work, to check that job's claim in the round trip recording
// this outcome; it returns that job, to be delivered next.
func (p *Publisher) deliver(soft, hard context.Context, j job, ops chan<- *storeReq, work <-chan job) *job {
	log := p.log.With("feed", j.Key.FeedID, "external_id", j.Key.ExternalID)
	// Not sent yet: a shutdown gives the item back rather than starting.
	if soft.Err() != nil {
		p.settle(hard, log, j, release(j, time.Time{}), ops, nil)
		return nil
	}
	if !p.waitToSend(soft, hard, log, j, ops) {
		return nil
	}
	ctx, cancel := context.WithTimeout(hard, p.o.SendTimeout)
	r := p.attempt(ctx, log, j, ops)
	cancel()
	switch r.outcome {
	case outcomeLost:
		log.Warn("claim lapsed before sending; not sent, the item is its new holder's", "claim_ttl", p.o.ClaimTTL, "waited", time.Since(j.at))
		return nil
	case outcomeReleased:
		log.Warn("not sent; the item is given back", "cause", r.err)
		p.settle(hard, log, j, r.s, ops, nil)
		return nil
	}
	p.m.requests.WithLabelValues(cmp.Or(r.typ, "unknown"), r.outcome).Inc()
	attrs := []any{"type", r.typ, "attempt", j.Attempts + 1}
	if r.s.Run != "" {
		attrs = append(attrs, "unresolved", r.s.Run, "in_a_row", runLength(j, r.s.Run))
	}
	switch r.outcome {
	case "created", "updated", "recovered":
		log.Info("published", append(attrs, "outcome", r.outcome, "content_id", r.s.ContentID)...)
	case "removed":
		log.Warn("content deleted on the service; left alone", append(attrs, "cause", r.err)...)
	case "dead_letter":
		log.Error("delivery failed permanently; dead-lettered", append(attrs, "status", r.s.Status, "cause", r.err)...)
	default:
		log.Warn("delivery failed; will retry", append(attrs, "status", r.s.Status, "retry_at", r.s.Next, "cause", r.err)...)
	}
	next := p.takeNext(soft, ops, work)
	p.settle(hard, log, j, r.s, ops, next)
	if r.s.Kind == dedupe.Retry && !r.s.Next.After(time.Now()) {
		// Due again at once (a re-create). A delivery that left a newer
		// version due is found by the dispatcher's next claim, which a
		// freed worker slot triggers anyway.
		p.wake()
	}
	return next
}

// takeNext takes a job waiting for a sender, if there is one that can be
// sent at once: its claim check then rides in the round trip that records
// the outcome before it, rather than costing one of its own. Only with
// ops (a store that batches); without, the check costs no round trip.
func (p *Publisher) takeNext(soft context.Context, ops chan<- *storeReq, work <-chan job) *job {
	if ops == nil || soft.Err() != nil || p.gate.closed() {
		return nil
	}
	select {
	case j, ok := <-work:
		if !ok {
			return nil
		}
		return &j
	default:
		return nil
	}
}

// waitToSend holds a claimed item while the API asked every call to wait
// (Retry-After), and reports whether it may be sent now. An item is never
// held past its claim's wait budget (see claimWait): one that already
// waited that long for a sender, or whose wait would run past it, is given
// back (due when the API's wait ends) instead of held while its claim
// runs out, which would let another worker take it and both send it.
func (p *Publisher) waitToSend(soft, hard context.Context, log *slog.Logger, j job, ops chan<- *storeReq) bool {
	limit := j.at.Add(p.claimWait())
	if time.Now().After(limit) {
		log.Info("claim given back: it waited too long for a sender", "waited", time.Since(j.at), "claim_ttl", p.o.ClaimTTL)
		p.settle(hard, log, j, release(j, time.Time{}), ops, nil)
		return false
	}
	blocked, err := p.gate.waitUntil(soft, limit)
	switch {
	case err != nil: // shutdown
		p.settle(hard, log, j, release(j, time.Time{}), ops, nil)
		return false
	case !blocked.IsZero():
		log.Info("claim given back while the API asks to wait", "until", blocked, "claim_ttl", p.o.ClaimTTL)
		p.settle(hard, log, j, release(j, blocked), ops, nil)
		return false
	}
	return true
}

// settle records an outcome, retrying through store failures for a while.
// With ops, it is recorded together with other deliveries' store
// operations that come meanwhile (see flushOps), and the claim of next,
// when not nil, is checked in the same round trip (next.renewal).
func (p *Publisher) settle(hard context.Context, log *slog.Logger, j job, s dedupe.Settlement, ops chan<- *storeReq, next *job) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hard), settleTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		var held bool
		err := p.storeOp(ctx, "settle", func(ctx context.Context) error {
			if ops == nil {
				var err error
				held, err = p.store.Settle(ctx, j.Key, j.owner, s, time.Now())
				return err
			}
			batch := []dedupe.ClaimOp{{Key: j.Key, Owner: j.owner, Settle: &s}}
			at := time.Now()
			if next != nil {
				batch = append(batch, dedupe.ClaimOp{Key: next.Key, Owner: next.owner, TTL: p.o.ClaimTTL})
			}
			res, err := queueOps(ctx, ops, batch)
			if err != nil {
				return err
			}
			if next != nil && res[1].Err == nil {
				rn := res[1].Renewal
				next.renewal = &rn
				if rn.Held {
					next.at = at
				}
			}
			next = nil // checked once: a retry records the outcome alone
			held = res[0].Held
			return res[0].Err
		})
		if err == nil {
			if !held && s.Kind != dedupe.Release {
				// The store kept at most the content id: the item's state
				// belongs to whoever claims it next, and a pending mark
				// makes that one look the item up first.
				log.Warn("claim lapsed before the outcome was recorded; the item is left to its next holder (a content id the API gave is kept)",
					"claim_ttl", p.o.ClaimTTL, "outcome", s.Kind)
			}
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			log.Error("recording a delivery failed; the item will be looked up before it is sent again", "cause", err)
			return
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// renew is the check right before a send: the claim is still this job's,
// now extended by a whole ClaimTTL, and the record as it is now.
func (p *Publisher) renew(ctx context.Context, j job, ops chan<- *storeReq) (dedupe.Renewal, error) {
	var rn dedupe.Renewal
	err := p.storeOp(ctx, "renew_claim", func(ctx context.Context) (err error) {
		if ops == nil {
			rn, err = p.store.RenewClaim(ctx, j.Key, j.owner, p.o.ClaimTTL)
			return err
		}
		res, err := queueOps(ctx, ops, []dedupe.ClaimOp{{Key: j.Key, Owner: j.owner, TTL: p.o.ClaimTTL}})
		if err != nil {
			return err
		}
		rn = res[0].Renewal
		return res[0].Err
	})
	return rn, err
}

// storeReq is store operations waiting for flushOps, to be applied in one
// round trip.
type storeReq struct {
	ops  []dedupe.ClaimOp
	res  []dedupe.ClaimResult
	done chan struct{} // closed when res is set
}

// queueOps hands ops to flushOps and waits for their results; the error
// is ctx's, each op's own is in its result.
func queueOps(ctx context.Context, ops chan<- *storeReq, batch []dedupe.ClaimOp) ([]dedupe.ClaimResult, error) {
	r := &storeReq{ops: batch, done: make(chan struct{})}
	select {
	case ops <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
		return r.res, nil
	case <-ctx.Done():
		// The operations may still be applied; applying them again is
		// harmless (a renewal extends, an outcome from a holder that
		// released its claim records nothing), which is what the
		// caller's retry does.
		return nil, ctx.Err()
	}
}

// maxOpBatch bounds the store operations of one round trip.
const maxOpBatch = 256

// flushOps applies queued store operations (claim renewals and outcomes)
// until in is closed: whatever queued while the store was busy goes in the
// next round trip (group commit), so a lone delivery waits for nothing and
// a busy outbox pays a fraction of a round trip per item. Each operation
// stays its own atomic step.
func (p *Publisher) flushOps(cb dedupe.ClaimBatcher, in <-chan *storeReq) {
	for first := range in {
		batch := []*storeReq{first}
		n := len(first.ops)
	more:
		for n < maxOpBatch {
			select {
			case r, ok := <-in:
				if !ok {
					break more
				}
				batch = append(batch, r)
				n += len(r.ops)
			default:
				break more
			}
		}
		ops := make([]dedupe.ClaimOp, 0, n)
		for _, r := range batch {
			ops = append(ops, r.ops...)
		}
		// Outcomes are recorded even during a shutdown: the API already
		// acted on them.
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		res := cb.ClaimOps(ctx, ops, time.Now())
		cancel()
		for _, r := range batch {
			r.res, res = res[:len(r.ops)], res[len(r.ops):]
			close(r.done)
		}
	}
}

// attempt checks the claim, sends one item and decides what to record.
func (p *Publisher) attempt(ctx context.Context, log *slog.Logger, j job, ops chan<- *storeReq) result {
	var env envelope
	if err := json.Unmarshal(j.Data, &env); err != nil || env.V != 1 {
		err = cmp.Or(err, errors.New("unknown envelope version"))
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Reason: "undecodable outbox entry: " + err.Error()}, outcome: "dead_letter", err: err}
	}
	pl := &env.Payload
	// A mark found by the claim: an earlier POST may have reached the
	// service (an ambiguous failure, or a crash between send and record).
	pendingBefore := j.Record.PendingHash != ""
	send, err := p.prepare(ctx, log, j.Claimed, &env)
	if err != nil {
		return p.failed(j, cmp.Or(j.Record.Type, pl.Type), err, pendingBefore)
	}

	// The check right before sending: the claim is still ours (a long
	// wait may have let it lapse, and another worker take the item), now
	// extended by a whole ClaimTTL, which outlasts this send (SendTimeout
	// is at most half of it); and the record as it is now. A check made
	// a moment ago stands for it (see checkFresh): the claim itself, or a
	// renewal that rode the previous outcome's round trip.
	rn := dedupe.Renewal{Held: true, Record: j.Record, Known: true}
	if j.renewal != nil {
		rn = *j.renewal
	}
	if time.Since(j.at) >= p.checkFresh() {
		var err error
		if rn, err = p.renew(ctx, j, ops); err != nil {
			return result{s: release(j, time.Now().Add(p.backoff(0))), outcome: outcomeReleased,
				err: fmt.Errorf("check the claim before sending: %w", err)}
		}
	}
	if !rn.Held {
		return result{outcome: outcomeLost}
	}
	rec := j.Record
	if rn.Known {
		// Only a worker whose claim lapsed can have changed it, and only
		// by recording the content id its POST got.
		rec.ContentID, rec.Type = rn.Record.ContentID, rn.Record.Type
	}
	// This claim set the mark only when none was set: any other mark, set
	// by anyone, means a POST may have landed.
	pending := cmp.Or(j.Record.PendingHash, rn.Record.PendingHash)
	if !pendingBefore && pending == j.Hash {
		pending = ""
	}

	if rec.ContentID != 0 {
		// Published before: PUT the new version to the type the content
		// has on the service.
		typ := cmp.Or(rec.Type, pl.Type)
		send.Type = typ
		err = p.api.Update(ctx, rec.ContentID, send)
		if err == nil {
			return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: rec.ContentID, Type: typ, Hash: j.Hash}, outcome: "updated", typ: typ}
		}
		if errors.Is(err, acs.ErrNotFound) {
			if env.RecreateDeleted {
				log.Warn("content deleted on the service; creating it again", "content_id", rec.ContentID)
				return result{s: dedupe.Settlement{Kind: dedupe.Retry, Next: time.Now(), ForgetContent: true, Status: http.StatusNotFound, Reason: err.Error()}, outcome: "retry", typ: typ, err: err}
			}
			return result{s: dedupe.Settlement{Kind: dedupe.Removed}, outcome: "removed", typ: typ, err: err}
		}
		return p.failed(j, typ, err, false)
	}

	if pending != "" {
		// Look before posting again.
		found, err := p.api.Find(ctx, j.Key.ExternalID)
		if err != nil {
			return p.failed(j, pl.Type, err, true)
		}
		if found.ID != 0 {
			typ := cmp.Or(found.Type, pl.Type)
			// Recorded with the hash that was being posted; if the feed
			// changed since, the outbox keeps the newer hash and the
			// store makes it due at once, as an update.
			return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: found.ID, Type: typ, Hash: pending}, outcome: "recovered", typ: typ}
		}
	}
	send.Type = pl.Type
	id, err := p.api.Create(ctx, send)
	if err == nil {
		return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: id, Type: pl.Type, Hash: j.Hash}, outcome: "created", typ: pl.Type}
	}
	// Only an answer that refused the request proves nothing was created;
	// and a mark an earlier POST left stays whatever this one got, since
	// that one may still land.
	return p.failed(j, pl.Type, err, pending != "" || ambiguous(err))
}

// prepare resolves category names and fills the dates to send.
func (p *Publisher) prepare(ctx context.Context, log *slog.Logger, c dedupe.Claimed, env *envelope) (*transform.Payload, error) {
	firstSeen := cmp.Or(c.Record.FirstSeen, c.Enqueued, time.Now())
	send := env.Payload.ForSend(firstSeen, time.Now(), env.Dates)
	if len(send.CategoryNames) > 0 {
		ids, err := p.cats.resolve(ctx, log, send.CategoryNames, env.CreateCategories)
		if err != nil {
			return nil, err
		}
		send.CategoryIDs = append(send.CategoryIDs, ids...)
		send.CategoryNames = nil
	}
	return send, nil
}

// errNotSent marks a failure before any request went out.
var errNotSent = errors.New("not sent")

// ambiguous reports whether a failed POST may have created the item: any
// failure but an answer refusing it (4xx; a 409 may mean it exists).
func ambiguous(err error) bool {
	if errors.Is(err, errNotSent) {
		return false
	}
	var ae *acs.Error
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusConflict || ae.Status == http.StatusRequestTimeout
	}
	// A request refused before sending (acs validation) created nothing.
	return !errors.Is(err, acs.ErrInvalid)
}

// permanent reports whether retrying cannot help: a 4xx other than 401
// (credentials, fixed by the operator), 408, 409 and 429, or a request the
// client refused to send.
func permanent(err error) bool {
	var ae *acs.Error
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
			return false
		}
		return ae.Status >= 400 && ae.Status < 500
	}
	return errors.Is(err, acs.ErrInvalid)
}

// runUnresolved names the failures that retrying may never resolve: a
// 409 (and, for a POST, nothing found by external_id), and a look-up that
// cannot tell whether the item exists (ErrUnverifiable). They count as one
// run, so that alternating between them still ends in the dead letters
// after MaxUnresolved attempts in a row; the reason says which it was.
const runUnresolved = "unresolved"

// runOf names the run err belongs to, if any.
func runOf(err error) string {
	var ae *acs.Error
	if errors.Is(err, ErrUnverifiable) || errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return runUnresolved
	}
	return ""
}

// runLength is how many attempts in a row, this one included, end in run.
func runLength(j job, run string) int {
	if j.Run == run {
		return j.RunLength + 1
	}
	return 1
}

// failed turns an error into a retry or a dead letter. keepPending keeps
// the pending mark: the item may exist on the service.
func (p *Publisher) failed(j job, typ string, err error, keepPending bool) result {
	var ae *acs.Error
	status := 0
	if errors.As(err, &ae) {
		status = ae.Status
	}
	run := runOf(err)
	if run != "" {
		if n := runLength(j, run); n >= p.o.MaxUnresolved {
			// Retrying has not told, and may never tell, whether the item
			// exists: an operator decides (the pending mark stays, so a
			// retry of the dead letter looks it up first).
			reason := fmt.Sprintf("%s (given up after %d attempts in a row)", err, n)
			return result{s: dedupe.Settlement{Kind: dedupe.Dead, Status: status, Reason: reason, Ambiguous: keepPending, Run: run}, outcome: "dead_letter", typ: typ, err: err}
		}
	}
	if permanent(err) {
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Status: status, Reason: err.Error(), Ambiguous: keepPending}, outcome: "dead_letter", typ: typ, err: err}
	}
	wait := p.backoff(j.Attempts)
	if keepPending && ae == nil {
		// No answer (a timeout, a reset, a cancel): the service may still
		// be working on the request. Looking the item up before it is done
		// would find nothing and post it twice, so wait as long as a send
		// may take first.
		wait = max(wait, p.o.SendTimeout)
	}
	if ae != nil && ae.RetryAfter > 0 {
		// The gate already holds every worker back (see gated); this item
		// waits as long, within MaxBackoff, plus jitter so the queue does
		// not return at once.
		ra := min(ae.RetryAfter, p.o.MaxBackoff)
		wait = ra + rand.N(ra/10+time.Millisecond)
	}
	return result{s: dedupe.Settlement{Kind: dedupe.Retry, Next: time.Now().Add(wait), Status: status, Reason: err.Error(), Ambiguous: keepPending, Run: run}, outcome: "retry", typ: typ, err: err}
}

// backoff is BaseBackoff doubled per earlier attempt, capped at
// MaxBackoff, with jitter over its upper half.
func (p *Publisher) backoff(attempts int) time.Duration {
	d := p.o.BaseBackoff
	for range min(attempts, 40) {
		if d >= p.o.MaxBackoff/2 {
			d = p.o.MaxBackoff
			break
		}
		d *= 2
	}
	d = min(d, p.o.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// gate holds every API call back while the service asked to slow down.
type gate struct {
	mu    sync.Mutex
	until time.Time
}

// closed reports whether calls must wait now.
func (g *gate) closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Now().Before(g.until)
}

func (g *gate) wait(ctx context.Context) error {
	_, err := g.waitUntil(ctx, time.Time{})
	return err
}

// waitUntil waits while the gate is closed, unless it stays closed past
// limit (zero: no limit): then it returns at once with when the gate opens.
func (g *gate) waitUntil(ctx context.Context, limit time.Time) (blocked time.Time, err error) {
	for {
		g.mu.Lock()
		until := g.until
		g.mu.Unlock()
		d := time.Until(until)
		if d <= 0 {
			return time.Time{}, nil
		}
		if !limit.IsZero() && until.After(limit) {
			return until, nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
}

func (g *gate) close(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if u := time.Now().Add(d); u.After(g.until) {
		g.until = u
	}
}

// minRetryAfterCap is the least Retry-After the gate honours in full, even
// when MaxBackoff is shorter: the cap is there to defeat absurd answers (a
// day), not to shorten a rate limit the service states.
const minRetryAfterCap = time.Minute

// gated is the API behind the gate: every call waits while the service
// asked to slow down, and an answer with Retry-After closes the gate for
// all workers, so the rate limit is honoured by the process, not per item.
type gated struct {
	api API
	g   *gate
	// max caps the Retry-After honoured, so a wrong or hostile answer
	// cannot stop delivery for long: max(MaxBackoff, minRetryAfterCap).
	max time.Duration
}

func (a gated) before(ctx context.Context) error {
	if err := a.g.wait(ctx); err != nil {
		return fmt.Errorf("waiting for the API's Retry-After: %w: %w", errNotSent, err)
	}
	return nil
}

func (a gated) after(err error) error {
	var ae *acs.Error
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		a.g.close(min(ae.RetryAfter, a.max))
	}
	return err
}

func (a gated) Create(ctx context.Context, pl *transform.Payload) (int64, error) {
	if err := a.before(ctx); err != nil {
		return 0, err
	}
	id, err := a.api.Create(ctx, pl)
	return id, a.after(err)
}

func (a gated) Update(ctx context.Context, id int64, pl *transform.Payload) error {
	if err := a.before(ctx); err != nil {
		return err
	}
	return a.after(a.api.Update(ctx, id, pl))
}

func (a gated) Find(ctx context.Context, externalID string) (Found, error) {
	if err := a.before(ctx); err != nil {
		return Found{}, err
	}
	f, err := a.api.Find(ctx, externalID)
	return f, a.after(err)
}

func (a gated) Categories(ctx context.Context) ([]Category, error) {
	if err := a.before(ctx); err != nil {
		return nil, err
	}
	c, err := a.api.Categories(ctx)
	return c, a.after(err)
}

func (a gated) CreateCategory(ctx context.Context, name string) (Category, error) {
	if err := a.before(ctx); err != nil {
		return Category{}, err
	}
	c, err := a.api.CreateCategory(ctx, name)
	return c, a.after(err)
}
