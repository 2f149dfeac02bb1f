package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// deliver runs one claimed item: wait for the API if it asked to, check
// the claim, send, then record the outcome, together with other
// deliveries' store operations when ops is not nil, and report it once
// recorded. With h, the outcome is handed over (handover.go) and deliver
// returns without waiting for it. Otherwise it may take the next job from
// work, to check that job's claim in the round trip recording this
// outcome; it returns that job, to be delivered next.
func (p *Publisher) deliver(soft, hard context.Context, j job, ops chan<- *storeReq, h *handover, work <-chan job) *job {
	log := itemLogger(p.log, j.Key.FeedID, j.Key.ExternalID)
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
		p.settleOrHandOver(hard, log, j, r.s, ops, h)
		return nil
	case outcomeWaiting:
		log.Debug("a repost waits for the item it is a repost of", "cause", r.err)
		p.settleOrHandOver(hard, log, j, r.s, ops, h)
		return nil
	}
	if h != nil {
		// The sender goes on; the outcome is reported once recorded.
		// The report has copies of its own, so that j and r stay off
		// the heap on the other path.
		hj, hr := j, r
		p.handOver(hard, log, j, r.s, ops, h, func() { p.delivered(hard, log, hj, hr) })
		return nil
	}
	next := p.takeNext(soft, ops, work)
	check := next
	if next != nil && time.Since(next.at) < p.checkFresh()/2 {
		// Its claim is recent enough to stand for the check before its
		// send (see checkFresh) after this outcome's round trip: no
		// renewal rides with it. Older, it is checked here, or by a round
		// trip of its own if the claim is older still by the send.
		check = nil
	}
	if p.settle(hard, log, j, r.s, ops, check) {
		p.delivered(hard, log, j, r)
	}
	return next
}

// delivered reports a send's outcome once it is recorded: the request
// counter, the observer and the log say what the store now holds, never
// ahead of it; the item counts as finished for the backlog. An outcome
// never recorded is not reported: the item stays in the outbox, pending,
// and its next holder's look-up reports it (as recovered).
func (p *Publisher) delivered(hard context.Context, log *slog.Logger, j job, r result) {
	if r.outcome != outcomeAliased {
		p.m.requests.WithLabelValues(cmp.Or(r.typ, "unknown"), r.outcome).Inc()
	}
	p.observeDelivery(j, r)
	// An unreadable answer is logged at ERROR once per feed and cause;
	// the attempts it fails are then told more quietly.
	quiet := p.noteUnreadable(log, j.Key.FeedID, r.err)
	if lv := deliveredLevel(r.outcome, quiet); log.Enabled(hard, lv) {
		// Only then are the attributes made: at the usual level (warn)
		// a published item logs nothing, and making them was most of
		// what reporting it cost.
		logDelivered(hard, log, lv, j, r)
	}
	if r.s.Kind != dedupe.Retry {
		p.backlog.finished()
	}
	if r.s.Kind == dedupe.Retry && !r.s.Next.After(time.Now()) {
		// Due again at once (a re-create). A delivery that left a newer
		// version due is found by the dispatcher's next claim: the one a
		// freed worker slot triggers while the claimer waits for slots
		// (the slot is freed once the outcome is recorded, or, handed
		// over, the recording wakes the claimer), else the next poll.
		p.wake()
	}
}

// deliveredLevel is the level delivered logs an outcome at.
func deliveredLevel(outcome string, quiet bool) slog.Level {
	switch outcome {
	case "created", "updated", "recovered", outcomeAliased, outcomeMerged, "deleted":
		return slog.LevelInfo
	case "removed":
		return slog.LevelWarn
	case "dead_letter":
		if quiet {
			return slog.LevelWarn
		}
		return slog.LevelError
	}
	if quiet {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// logDelivered logs an outcome at lv (deliveredLevel's).
func logDelivered(ctx context.Context, log *slog.Logger, lv slog.Level, j job, r result) {
	attrs := []any{"type", r.typ, "attempt", j.Attempts + 1}
	if r.s.Run != "" {
		attrs = append(attrs, "unresolved", r.s.Run, "in_a_row", runLength(j, r.s.Run))
	}
	switch r.outcome {
	case "created", "updated", "recovered":
		log.Log(ctx, lv, "published", append(attrs, "outcome", r.outcome, "content_id", r.s.ContentID)...)
	case outcomeAliased, outcomeMerged:
		log.Log(ctx, lv, "repost of another feed's item; not posted", append(attrs, "outcome", r.outcome, "content_id", r.s.ContentID)...)
	case "removed":
		log.Log(ctx, lv, "content deleted on the service; left alone", append(attrs, "cause", r.err)...)
	case "deleted":
		log.Log(ctx, lv, "withdrawn at the source; deleted on the service", append(attrs, "content_id", r.s.ContentID)...)
	case "dead_letter":
		log.Log(ctx, lv, "delivery failed permanently; dead-lettered", append(attrs, "status", r.s.Status, "cause", r.err)...)
	default:
		log.Log(ctx, lv, "delivery failed; will retry", append(attrs, "status", r.s.Status, "retry_at", r.s.Next, "cause", r.err)...)
	}
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

// settle records an outcome, retrying through store failures for a while,
// and reports whether it was recorded. With ops, it is recorded together
// with other deliveries' store operations that come meanwhile (see
// flushOps), and the claim of next, when not nil, is checked in the same
// round trip (next.renewal).
func (p *Publisher) settle(hard context.Context, log *slog.Logger, j job, s dedupe.Settlement, ops chan<- *storeReq, next *job) (recorded bool) {
	for {
		err := p.record(hard, log, j, s, ops, next)
		if err == nil {
			return true
		}
		next = nil // checked once: a retry records the outcome alone
		if h := p.o.Health; h != nil && hard.Err() == nil && !h.Up() {
			// The store is down: keep the outcome, and the claim, until
			// it is back. Given up on, the claim would hold the item, for
			// a live holder that forgot it, until the claim's TTL.
			if h.Wait(hard) == nil {
				continue
			}
		}
		log.Error("recording a delivery failed; the item will be looked up before it is sent again", "cause", err)
		return false
	}
}

// record is settle's attempts for up to settleTimeout; it returns the last
// error.
func (p *Publisher) record(hard context.Context, log *slog.Logger, j job, s dedupe.Settlement, ops chan<- *storeReq, next *job) error {
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
			p.recorded(log, s, held)
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// recorded follows an outcome s recorded: the gauges change, or, if the
// claim was not held anymore, a warning.
func (p *Publisher) recorded(log *slog.Logger, s dedupe.Settlement, held bool) {
	if held && settledChanges(s.Kind) {
		p.statsChanged()
	}
	if !held && s.Kind != dedupe.Release {
		// The store kept at most the content id: the item's state
		// belongs to whoever claims it next, and a pending mark
		// makes that one look the item up first.
		log.Warn("claim lapsed before the outcome was recorded; the item is left to its next holder (a content id the API gave is kept)",
			"claim_ttl", p.o.ClaimTTL, "outcome", s.Kind)
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

// attempt checks the claim, sends one item and decides what to record.
func (p *Publisher) attempt(ctx context.Context, log *slog.Logger, j job, ops chan<- *storeReq) result {
	var env envelope
	if err := decodeEnvelope(j.Data, &env); err != nil {
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Reason: undecodableReason + ": " + err.Error()}, outcome: "dead_letter", err: err}
	}
	pl := &env.Payload
	// A mark found by the claim: an earlier POST may have reached the
	// service (an ambiguous failure, or a crash between send and record).
	pendingBefore := j.Record.PendingHash != ""
	var send *transform.Payload
	if !pl.Cancelled {
		var err error
		if send, err = p.prepare(ctx, log, j.Claimed, &env); err != nil {
			return p.failed(j, cmp.Or(j.Record.Type, pl.Type), err, pendingBefore)
		}
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
	if !p.alive() {
		// This worker's heartbeat may run out before the send ends, and
		// another worker take the item meanwhile: give it back unsent.
		return result{s: release(j, time.Time{}), outcome: outcomeReleased, err: errNoHeartbeat}
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
	if pl.Cancelled {
		return p.remove(ctx, j, rec, pending, pl)
	}
	if env.MergeInto != nil {
		if r, done := p.merge(ctx, log, j, &env, send, rec, pending); done {
			return r
		}
	}

	if rec.ContentID != 0 {
		// Published before: PUT the new version to the type the content
		// has on the service.
		typ := cmp.Or(rec.Type, pl.Type)
		send.Type = typ
		err := p.api.Update(ctx, rec.ContentID, send)
		if err == nil || errors.Is(err, acs.ErrUnreadable) {
			// A 2xx answer says the update was applied; its body, which
			// nothing here needs, may be unreadable (err is noted).
			return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: rec.ContentID, Type: typ, Hash: j.Hash}, outcome: "updated", typ: typ, err: err}
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
	if errors.Is(err, acs.ErrUnreadable) {
		return p.unreadableCreate(ctx, j, pl.Type, err)
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

// mayStillRun reports whether a request that got no answer may still be
// running on the service: we stopped waiting (a timeout or cancel), rather
// than the connection being reset or closed under it.
func mayStillRun(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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
// An unreadable answer (runUnreadable) counts in the same run.
const runUnresolved = "unresolved"

// runOf names the run err belongs to, if any.
func runOf(err error) string {
	var ae *acs.Error
	switch {
	case errors.Is(err, acs.ErrUnreadable):
		return runUnreadable
	case errors.Is(err, ErrUnverifiable) || errors.As(err, &ae) && ae.Status == http.StatusConflict:
		return runUnresolved
	}
	return ""
}

// runLength is how many attempts in a row, this one included, end in a
// run: every run counts together, so alternating kinds still end.
func runLength(j job, run string) int {
	if j.Run != "" && run != "" {
		return j.RunLength + 1
	}
	return 1
}

// failed turns an error into a retry or a dead letter. keepPending keeps
// the pending mark: the item may exist on the service.
func (p *Publisher) failed(j job, typ string, err error, keepPending bool) result {
	var ae *acs.Error
	var de *acs.DecodeError
	status := 0
	switch {
	case errors.As(err, &ae):
		status = ae.Status
	case errors.As(err, &de):
		status = de.Status
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
	if errors.Is(err, errCircuitOpen) {
		// Not sent: the service is failing as a whole. The item goes back
		// without counting an attempt, due when the circuit lets calls
		// through again (its claim loop waits for the same).
		return result{s: release(j, time.Now()), outcome: outcomeReleased, typ: typ, err: err}
	}
	wait := p.backoff(j.Attempts)
	if keepPending && ae == nil && !errors.Is(err, acs.ErrUnreadable) && mayStillRun(err) {
		// No answer in time (a timeout, a cancel): the service may still
		// be working on the request. Looking the item up before it is done
		// would find nothing and post it twice, so wait as long as a send
		// may take first. A reset or a closed connection ended the
		// request on the server's side: retried soon, looked up first.
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

// backoff is the wait after an item's attempts failed: the worker's one
// retry policy (acs.RetryPolicy.Backoff), from BaseBackoff doubling per
// earlier attempt (by backoffGrowth) up to MaxBackoff, with jitter over
// its upper half. The
// publisher is the only place delivery is retried: the worker's API
// client makes one attempt per call (see package doc, "Retries").
func (p *Publisher) backoff(attempts int) time.Duration {
	return acs.RetryPolicy{BaseDelay: p.o.BaseBackoff, MaxDelay: p.o.MaxBackoff, Multiplier: backoffGrowth}.Backoff(min(attempts, 60) + 1)
}

// backoffGrowth is how much an item's wait grows per failed attempt. An
// attempt after an ambiguous failure is a look-up and a POST, so at a 20%
// error rate one attempt in three fails, and over 2,000 items some fail
// seven or eight times in a row by chance alone: growing by half rather
// than doubling keeps those within seconds (100ms base: about 4s of waits
// over eight attempts, 13s doubling), while an item that keeps failing
// still reaches MaxBackoff (an hour after about 26 attempts).
const backoffGrowth = 1.5
