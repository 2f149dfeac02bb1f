package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/transform"
)

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
