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
	_ = p.loop(ctx, false) // Run never gives up on the store
	return nil
}

// Drain delivers every item due now, and items that become due while it
// runs (an update queued behind a create), then returns. Items waiting for
// a retry later stay queued. It returns ctx's error if cancelled first, and
// the store's error if the store stays unreachable for a second or two.
func (p *Publisher) Drain(ctx context.Context) error {
	if err := p.loop(ctx, true); err != nil {
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

func (p *Publisher) loop(ctx context.Context, drain bool) error {
	// Sends run on hard, which outlives ctx by the grace period.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	slots := make(chan struct{}, p.o.Workers)
	finished := make(chan struct{}, p.o.Workers)
	var wg sync.WaitGroup
	var storeDown time.Duration
	var timer *time.Timer
	sleep := func(d time.Duration, extra <-chan struct{}) {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
			return
		case <-p.wakeCh:
		case <-extra:
		}
		timer.Stop()
	}

	for ctx.Err() == nil {
		if err := p.gate.wait(ctx); err != nil {
			break
		}
		// Claim only what idle workers can take at once: a claimed item
		// waiting in a queue would only age its claim.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		n := 1
	more:
		for n < p.o.Workers {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
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
			if drain && storeDown >= drainGiveUp {
				p.wait(&wg, hardCancel)
				return err
			}
			storeDown = min(max(2*storeDown, 50*time.Millisecond), maxStoreDown)
			p.log.Warn("outbox claim failed; retrying", "cause", err, "retry_in", storeDown)
			sleep(storeDown, nil)
			continue
		}
		if storeDown > 0 {
			p.log.Info("store reachable again; delivering")
			storeDown = 0
		}
		for _, c := range claimed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.deliver(ctx, hard, c)
				<-slots
				select {
				case finished <- struct{}{}:
				default:
				}
			}()
		}
		p.maybeRefreshStats(ctx)
		if len(claimed) > 0 {
			continue
		}
		if drain && inFlight == 0 {
			return nil
		}
		wait := p.o.PollInterval
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		// In a drain, a finishing item may have made another due (an
		// update queued behind its create): look again at once.
		var extra <-chan struct{}
		if drain {
			extra = finished
		}
		sleep(wait, extra)
	}

	p.wait(&wg, hardCancel)
	return nil
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

// deliver runs one claimed item: send, then record the outcome.
func (p *Publisher) deliver(soft, hard context.Context, c dedupe.Claimed) {
	log := p.log.With("feed", c.Key.FeedID, "external_id", c.Key.ExternalID)
	// Not sent yet: a shutdown gives the item back rather than starting.
	if soft.Err() != nil || p.gate.wait(soft) != nil {
		p.settle(hard, log, c, dedupe.Settlement{Kind: dedupe.Release})
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
	p.settle(hard, log, c, r.s)
	if r.s.Kind == dedupe.Retry && !r.s.Next.After(time.Now()) {
		// Due again at once (a re-create). A delivery that left a newer
		// version due is found by the dispatcher's next claim, which a
		// freed worker slot triggers anyway.
		p.wake()
	}
}

// settle records an outcome, retrying through store failures for a while.
func (p *Publisher) settle(hard context.Context, log *slog.Logger, c dedupe.Claimed, s dedupe.Settlement) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hard), settleTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		var held bool
		err := p.storeOp(ctx, "settle", func(ctx context.Context) (err error) {
			held, err = p.store.Settle(ctx, c.Key, p.o.Owner, s, time.Now())
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
