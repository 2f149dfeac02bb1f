package publish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/transform"
)

// gate holds every API call back while the service asked to slow down
// (Retry-After), and is the circuit breaker: it opens only when the
// service fails as a whole, breakerFailures transient failures in a row
// across all workers, which a random 20% error rate practically never
// makes (0.2^10 is one in ten million). Open, it lets no call through
// until a wait (breakerMin doubling to breakerMax) has passed; then one
// call, the probe, goes while the others wait for its answer: a success
// closes the circuit, a failure opens it again for twice as long. Items
// held by an open circuit are not attempted, so their backoff does not
// grow while the service is down, and they go as soon as a probe
// succeeds.
type gate struct {
	mu    sync.Mutex
	until time.Time // Retry-After: no call before it
	// fails counts transient failures in a row.
	fails int
	// opened is when the circuit opened; zero while closed.
	opened    time.Time
	openUntil time.Time
	openFor   time.Duration
	probing   bool
	opens     uint64
	// changed is closed and replaced on every change of the circuit, to
	// wake the calls waiting for a probe's answer.
	changed chan struct{}
}

// Circuit breaker settings: failures in a row that open it, and the
// bounds of the wait before a probe. breakerMax is short so that a
// service back from an outage is found within seconds.
const (
	breakerFailures = 10
	breakerMin      = 500 * time.Millisecond
	breakerMax      = 5 * time.Second
)

// errCircuitOpen is a call not made because the circuit is open; it
// matches errNotSent.
var errCircuitOpen = fmt.Errorf("the API is failing as a whole (circuit open): %w", errNotSent)

// GateState is what the gate reports for the status page.
type GateState struct {
	// State is "closed" (calls go), "open" (none until a probe) or
	// "probing" (one call is testing the service).
	State string
	// FailuresInARow counts transient failures since the last success.
	FailuresInARow int
	// OpenedAt is when the circuit opened (zero while closed); Opens counts
	// how often it opened.
	OpenedAt time.Time
	Opens    uint64
	// RetryAfterUntil is when the service's last Retry-After ends.
	RetryAfterUntil time.Time
}

// GateState returns the circuit's state and the last Retry-After.
func (p *Publisher) GateState() GateState { return p.gate.state() }

func (g *gate) state() GateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := GateState{State: "closed", FailuresInARow: g.fails, OpenedAt: g.opened, Opens: g.opens, RetryAfterUntil: g.until}
	switch {
	case g.probing:
		s.State = "probing"
	case !g.opened.IsZero():
		s.State = "open"
	}
	return s
}

// changedLocked returns the channel closed at the next change; call with
// mu held.
func (g *gate) changedLocked() chan struct{} {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

func (g *gate) notifyLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// closed reports whether calls must wait now.
func (g *gate) closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	return now.Before(g.until) || g.probing || now.Before(g.openUntil)
}

// open reports whether the circuit is open (or probing).
func (g *gate) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.opened.IsZero()
}

func (g *gate) wait(ctx context.Context) error {
	_, err := g.waitUntil(ctx, time.Time{})
	return err
}

// waitUntil waits while the gate is closed (a Retry-After, an open
// circuit, a probe in flight), unless it stays closed past limit (zero:
// no limit): then it returns at once with when it may open. A probe in
// flight counts as closed for breakerMax.
func (g *gate) waitUntil(ctx context.Context, limit time.Time) (blocked time.Time, err error) {
	for {
		g.mu.Lock()
		now := time.Now()
		until := g.until
		if g.openUntil.After(until) {
			until = g.openUntil
		}
		if g.probing {
			until = later(until, now.Add(breakerMax))
		}
		ch := g.changedLocked()
		g.mu.Unlock()
		d := until.Sub(now)
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
		case <-ch:
			t.Stop()
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (g *gate) close(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if u := time.Now().Add(d); u.After(g.until) {
		g.until = u
	}
}

// admit lets one call through the circuit: at once while it is closed;
// as the probe once its wait has passed; after the probe's answer when
// one is in flight. It returns errCircuitOpen when the circuit is (or
// stays) open, with when it may let calls through again.
func (g *gate) admit(ctx context.Context) (probe bool, err error) {
	for {
		g.mu.Lock()
		now := time.Now()
		switch {
		case g.opened.IsZero():
			g.mu.Unlock()
			return false, nil
		case now.Before(g.openUntil):
			g.mu.Unlock()
			return false, errCircuitOpen
		case !g.probing:
			g.probing = true
			g.notifyLocked()
			g.mu.Unlock()
			return true, nil
		}
		ch := g.changedLocked()
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("waiting for the API's probe: %w: %w", errNotSent, ctx.Err())
		case <-ch:
		}
	}
}

// record counts one call's outcome: a transient failure (no answer, 408,
// a 5xx without Retry-After), or an answer that shows the service is up.
// Calls that ended with our context count neither.
func (g *gate) record(probe bool, err error) {
	transient := transientFailure(err)
	if err != nil && !transient && !answered(err) {
		if probe {
			g.mu.Lock()
			g.probing = false
			g.notifyLocked()
			g.mu.Unlock()
		}
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !transient {
		g.fails = 0
		if !g.opened.IsZero() || g.probing {
			g.opened, g.openUntil, g.openFor, g.probing = time.Time{}, time.Time{}, 0, false
			g.notifyLocked()
		}
		return
	}
	g.fails++
	now := time.Now()
	switch {
	case probe:
		g.openFor = min(2*g.openFor, breakerMax)
		g.openUntil = now.Add(g.openFor)
		g.probing = false
		g.notifyLocked()
	case g.opened.IsZero() && g.fails >= breakerFailures:
		g.opened, g.openFor = now, breakerMin
		g.openUntil = now.Add(g.openFor)
		g.opens++
		g.notifyLocked()
	}
}

// transientFailure reports a failure that says the service may be down:
// no answer, 408, or a 5xx without Retry-After (with one, the service is
// up and pacing us).
func transientFailure(err error) bool {
	if err == nil || errors.Is(err, errNotSent) || errors.Is(err, context.Canceled) || errors.Is(err, ErrUnverifiable) {
		return false
	}
	var ae *acs.Error
	if errors.As(err, &ae) {
		return ae.RetryAfter == 0 && (ae.Status >= 500 || ae.Status == http.StatusRequestTimeout)
	}
	return !errors.Is(err, acs.ErrInvalid)
}

// answered reports whether err is an answer of the service.
func answered(err error) bool {
	var ae *acs.Error
	return errors.As(err, &ae)
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

func (a gated) before(ctx context.Context) (bool, error) {
	if err := a.g.wait(ctx); err != nil {
		return false, fmt.Errorf("waiting for the API's Retry-After: %w: %w", errNotSent, err)
	}
	return a.g.admit(ctx)
}

func (a gated) after(probe bool, err error) error {
	var ae *acs.Error
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		a.g.close(min(ae.RetryAfter, a.max))
	}
	a.g.record(probe, err)
	return err
}

func (a gated) Create(ctx context.Context, pl *transform.Payload) (int64, error) {
	probe, err := a.before(ctx)
	if err != nil {
		return 0, err
	}
	id, err := a.api.Create(ctx, pl)
	return id, a.after(probe, err)
}

func (a gated) Update(ctx context.Context, id int64, pl *transform.Payload) error {
	probe, err := a.before(ctx)
	if err != nil {
		return err
	}
	return a.after(probe, a.api.Update(ctx, id, pl))
}

func (a gated) Find(ctx context.Context, externalID string) (Found, error) {
	probe, err := a.before(ctx)
	if err != nil {
		return Found{}, err
	}
	f, err := a.api.Find(ctx, externalID)
	return f, a.after(probe, err)
}

func (a gated) Categories(ctx context.Context) ([]Category, error) {
	probe, err := a.before(ctx)
	if err != nil {
		return nil, err
	}
	c, err := a.api.Categories(ctx)
	return c, a.after(probe, err)
}

func (a gated) CreateCategory(ctx context.Context, name string) (Category, error) {
	probe, err := a.before(ctx)
	if err != nil {
		return Category{}, err
	}
	c, err := a.api.CreateCategory(ctx, name)
	return c, a.after(probe, err)
}
