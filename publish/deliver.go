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
	var settles chan *settleReq
	if sb, ok := p.store.(dedupe.SettleBatcher); ok {
		settles = make(chan *settleReq, 2*w)
		flushed := make(chan struct{})
		go func() { defer close(flushed); p.flushSettles(sb, settles) }()
		// Every delivery has finished (stop) before this runs.
		defer func() { close(settles); <-flushed }()
	}
	// The senders live as long as the loop: a goroutine per item would
	// grow a fresh stack for every delivery (JSON is deep).
	work := make(chan dedupe.Claimed, 2*w)
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for c := range work {
				p.deliver(ctx, hard, c, settles)
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
		err := p.storeOp(ctx, "claim", func(ctx context.Context) (err error) {
			claimed, next, err = p.store.Claim(ctx, p.o.Owner, n, p.o.ClaimTTL, time.Now())
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
			work <- c // never blocks: work holds as many as there are slots
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

// result is what one delivery attempt came to.
type result struct {
	s       dedupe.Settlement
	outcome string // publish_requests_total outcome
	typ     string
	err     error
}

// deliver runs one claimed item: send, then record the outcome, together
// with other deliveries' outcomes when settles is not nil.
func (p *Publisher) deliver(soft, hard context.Context, c dedupe.Claimed, settles chan<- *settleReq) {
	log := p.log.With("feed", c.Key.FeedID, "external_id", c.Key.ExternalID)
	// Not sent yet: a shutdown gives the item back rather than starting.
	if soft.Err() != nil || p.gate.wait(soft) != nil {
		p.settle(hard, log, c, dedupe.Settlement{Kind: dedupe.Release}, settles)
		return
	}
	ctx, cancel := context.WithTimeout(hard, p.o.SendTimeout)
	r := p.attempt(ctx, log, c)
	cancel()
	p.m.requests.WithLabelValues(cmp.Or(r.typ, "unknown"), r.outcome).Inc()
	attrs := []any{"type", r.typ, "attempt", c.Attempts + 1}
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
	p.settle(hard, log, c, r.s, settles)
	if r.s.Kind == dedupe.Retry && !r.s.Next.After(time.Now()) {
		// Due again at once (a re-create). A delivery that left a newer
		// version due is found by the dispatcher's next claim, which a
		// freed worker slot triggers anyway.
		p.wake()
	}
}

// settle records an outcome, retrying through store failures for a while.
// With settles, it is recorded together with those of other deliveries
// that finished meanwhile (see flushSettles).
func (p *Publisher) settle(hard context.Context, log *slog.Logger, c dedupe.Claimed, s dedupe.Settlement, settles chan<- *settleReq) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hard), settleTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		var held bool
		err := p.storeOp(ctx, "settle", func(ctx context.Context) (err error) {
			if settles == nil {
				held, err = p.store.Settle(ctx, c.Key, p.o.Owner, s, time.Now())
				return err
			}
			held, err = queueSettle(ctx, settles, dedupe.SettleOp{Key: c.Key, Settlement: s})
			return err
		})
		if err == nil {
			if !held && s.Kind != dedupe.Release {
				log.Warn("claim expired while sending; outcome recorded anyway", "claim_ttl", p.o.ClaimTTL)
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

// settleReq is one outcome waiting to be recorded by flushSettles.
type settleReq struct {
	op   dedupe.SettleOp
	held bool
	err  error
	done chan struct{} // closed when held and err are set
}

func queueSettle(ctx context.Context, settles chan<- *settleReq, op dedupe.SettleOp) (bool, error) {
	r := &settleReq{op: op, done: make(chan struct{})}
	select {
	case settles <- r:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	select {
	case <-r.done:
		return r.held, r.err
	case <-ctx.Done():
		// The outcome may still be recorded; recording it again is
		// harmless, which is what the caller's retry does.
		return false, ctx.Err()
	}
}

// maxSettleBatch bounds the outcomes recorded in one round trip.
const maxSettleBatch = 256

// flushSettles records queued outcomes until in is closed: whatever queued
// while the store was busy goes in the next round trip (group commit), so
// a lone delivery waits for nothing and a busy outbox pays a fraction of a
// round trip per item. Each outcome stays its own atomic step.
func (p *Publisher) flushSettles(sb dedupe.SettleBatcher, in <-chan *settleReq) {
	for first := range in {
		batch := []*settleReq{first}
	more:
		for len(batch) < maxSettleBatch {
			select {
			case r, ok := <-in:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		ops := make([]dedupe.SettleOp, len(batch))
		for i, r := range batch {
			ops[i] = r.op
		}
		// Outcomes are recorded even during a shutdown: the API already
		// acted on them.
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		held, errs := sb.SettleMany(ctx, p.o.Owner, ops, time.Now())
		cancel()
		for i, r := range batch {
			r.held, r.err = held[i], errs[i]
			close(r.done)
		}
	}
}

// attempt sends one item and decides what to record.
func (p *Publisher) attempt(ctx context.Context, log *slog.Logger, c dedupe.Claimed) result {
	var env envelope
	if err := json.Unmarshal(c.Data, &env); err != nil || env.V != 1 {
		err = cmp.Or(err, errors.New("unknown envelope version"))
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Reason: "undecodable outbox entry: " + err.Error()}, outcome: "dead_letter", err: err}
	}
	pl := &env.Payload
	rec := c.Record

	if rec.ContentID != 0 {
		// Published before: PUT the new version to the type the content
		// has on the service.
		typ := cmp.Or(rec.Type, pl.Type)
		send, err := p.prepare(ctx, log, c, &env)
		if err != nil {
			return p.failed(c, typ, err, false)
		}
		send.Type = typ
		err = p.api.Update(ctx, rec.ContentID, send)
		if err == nil {
			return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: rec.ContentID, Type: typ, Hash: c.Hash}, outcome: "updated", typ: typ}
		}
		if errors.Is(err, acs.ErrNotFound) {
			if env.RecreateDeleted {
				log.Warn("content deleted on the service; creating it again", "content_id", rec.ContentID)
				return result{s: dedupe.Settlement{Kind: dedupe.Retry, Next: time.Now(), ForgetContent: true, Status: http.StatusNotFound, Reason: err.Error()}, outcome: "retry", typ: typ, err: err}
			}
			return result{s: dedupe.Settlement{Kind: dedupe.Removed}, outcome: "removed", typ: typ, err: err}
		}
		return p.failed(c, typ, err, false)
	}

	if rec.PendingHash != "" {
		// An earlier POST may have reached the service (an ambiguous
		// failure, or a crash between send and record): look before
		// posting again.
		found, err := p.api.Find(ctx, c.Key.ExternalID)
		if err != nil {
			return p.failed(c, pl.Type, err, true)
		}
		if found.ID != 0 {
			typ := cmp.Or(found.Type, pl.Type)
			// Recorded with the hash that was being posted; if the feed
			// changed since, the outbox keeps the newer hash and the
			// store makes it due at once, as an update.
			return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: found.ID, Type: typ, Hash: rec.PendingHash}, outcome: "recovered", typ: typ}
		}
	}
	send, err := p.prepare(ctx, log, c, &env)
	if err != nil {
		return p.failed(c, pl.Type, err, false)
	}
	id, err := p.api.Create(ctx, send)
	if err == nil {
		return result{s: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: id, Type: pl.Type, Hash: c.Hash}, outcome: "created", typ: pl.Type}
	}
	// Only an answer that refused the request proves nothing was created.
	return p.failed(c, pl.Type, err, ambiguous(err))
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

// failed turns an error into a retry or a dead letter. keepPending keeps
// the pending mark: the item may exist on the service.
func (p *Publisher) failed(c dedupe.Claimed, typ string, err error, keepPending bool) result {
	var ae *acs.Error
	status := 0
	if errors.As(err, &ae) {
		status = ae.Status
	}
	if permanent(err) {
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Status: status, Reason: err.Error(), Ambiguous: keepPending}, outcome: "dead_letter", typ: typ, err: err}
	}
	wait := p.backoff(c.Attempts)
	if ae != nil && ae.RetryAfter > 0 {
		// The gate already holds every worker back (see gated); this item
		// waits as long, plus jitter so the queue does not return at once.
		wait = ae.RetryAfter + rand.N(ae.RetryAfter/10+time.Millisecond)
	}
	return result{s: dedupe.Settlement{Kind: dedupe.Retry, Next: time.Now().Add(wait), Status: status, Reason: err.Error(), Ambiguous: keepPending}, outcome: "retry", typ: typ, err: err}
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

func (g *gate) wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		d := time.Until(g.until)
		g.mu.Unlock()
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
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

// gated is the API behind the gate: every call waits while the service
// asked to slow down, and an answer with Retry-After closes the gate for
// all workers, so the rate limit is honoured by the process, not per item.
type gated struct {
	api API
	g   *gate
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
		a.g.close(ae.RetryAfter)
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
