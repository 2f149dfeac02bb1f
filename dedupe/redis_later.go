package dedupe

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Outcomes handed over, on Redis. A sender that hands its outcome over
// (publish's hand-over) does not wait for it, so the store may hold it a
// few milliseconds for company: the outcomes of every call that arrives
// meanwhile go in one pipeline. Waited for one by one, they were the
// largest share of a first pass's round trips (3.65 outcomes each; see
// docs/PERFORMANCE.md, "Twelfth round"), and each round trip costs
// the worker tens of microseconds in go-redis and its syscalls.

var _ LaterClaimBatcher = (*Redis)(nil)

// redisLaterLinger is how long the first outcome handed over waits for
// company (Redis.linger; tests set it).
const redisLaterLinger = 5 * time.Millisecond

// laterGroup gathers ClaimOpsLater calls in windows: the first call of a
// window leads it, waits the linger (or until maxLaterOps wait) and runs
// them all as one ClaimOps.
type laterGroup struct {
	mu sync.Mutex
	// cur is the window calls join; nil once it is full or taken, so
	// that the next call opens another.
	cur *laterWindow
	// hold, set by tests only, is called by a leader before it takes its
	// window's calls.
	hold func()
}

type laterWindow struct {
	calls []*laterCall
	nops  int
	full  chan struct{} // closed when nops reaches maxLaterOps
}

type laterCall struct {
	ops  []ClaimOp
	now  time.Time
	ctx  context.Context
	res  []ClaimResult
	done chan struct{}
}

// maxLaterOps bounds the outcomes of one window's pipeline.
const maxLaterOps = 512

// ClaimOpsLater implements [LaterClaimBatcher]: the ops of every call
// within a few milliseconds of the first go in one pipeline, applied at
// the latest of the calls' now. It returns once they are applied, as
// ClaimOps does, or once ctx ends (the ops may then still be applied, as
// with a ClaimOps whose reply was not waited for).
func (r *Redis) ClaimOpsLater(ctx context.Context, ops []ClaimOp, now time.Time) []ClaimResult {
	g := &r.later
	c := &laterCall{ops: ops, now: now, ctx: ctx, done: make(chan struct{})}
	g.mu.Lock()
	w := g.cur
	lead := w == nil
	if lead {
		w = &laterWindow{full: make(chan struct{})}
		g.cur = w
	}
	w.calls = append(w.calls, c)
	w.nops += len(ops)
	if w.nops >= maxLaterOps {
		close(w.full)
		g.cur = nil
	}
	g.mu.Unlock()
	if !lead {
		select {
		case <-c.done:
			return c.res
		case <-ctx.Done():
			return failedOps(ops, ctx.Err())
		}
	}
	t := time.NewTimer(r.linger)
	select {
	case <-t.C:
	case <-w.full:
	case <-ctx.Done():
	}
	t.Stop()
	if g.hold != nil {
		g.hold()
	}
	g.mu.Lock()
	if g.cur == w {
		g.cur = nil
	}
	calls, nops := w.calls, w.nops
	g.mu.Unlock()
	r.runWindow(calls, nops)
	return c.res
}

// runWindow runs the calls' ops (nops of them) in one ClaimOps and hands each call its
// results. The pipeline runs on none of the callers' cancellation, which
// would fail the others' ops, and until the latest of their deadlines.
func (r *Redis) runWindow(calls []*laterCall, nops int) {
	defer func() {
		// Nobody waits forever, whatever happened above.
		for _, c := range calls {
			if c.res == nil {
				c.res = failedOps(c.ops, errLaterAbandoned)
			}
			close(c.done)
		}
	}()
	ctx := context.WithoutCancel(calls[0].ctx)
	var latest time.Time
	bounded := true
	all := make([]ClaimOp, 0, nops)
	now := calls[0].now
	for _, c := range calls {
		all = append(all, c.ops...)
		if c.now.After(now) {
			now = c.now
		}
		d, ok := c.ctx.Deadline()
		bounded = bounded && ok
		if d.After(latest) {
			latest = d
		}
	}
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	res := r.ClaimOps(ctx, all, now)
	for _, c := range calls {
		c.res, res = res[:len(c.ops):len(c.ops)], res[len(c.ops):]
	}
}

var errLaterAbandoned = errors.New("redis: outcomes held for company were not applied")

// failedOps is err for each of ops.
func failedOps(ops []ClaimOp, err error) []ClaimResult {
	out := make([]ClaimResult, len(ops))
	for i := range out {
		out[i].Err = err
	}
	return out
}
