package dedupe

import (
	"context"
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

// laterGroup gathers ClaimOpsLater calls: the first of a window leads it,
// waits the linger (or until maxLaterOps wait) and runs them all as one
// ClaimOps.
type laterGroup struct {
	mu      sync.Mutex
	waiting []*laterCall
	nops    int
	// full is closed by the call that makes the window full.
	full chan struct{}
	// hold, set by tests only, is called by a leader before it takes the
	// window's calls.
	hold func()
}

type laterCall struct {
	ops  []ClaimOp
	res  []ClaimResult
	done chan struct{}
}

// maxLaterOps bounds the outcomes of one window's pipeline.
const maxLaterOps = 512

// ClaimOpsLater implements [LaterClaimBatcher]: the ops of every call
// within a few milliseconds of the first go in one pipeline. It returns
// once they are applied, as ClaimOps does; a call that is not the first
// of its window waits for the first, whose context bounds the pipeline.
func (r *Redis) ClaimOpsLater(ctx context.Context, ops []ClaimOp, _ time.Time) []ClaimResult {
	g := &r.later
	c := &laterCall{ops: ops, done: make(chan struct{})}
	g.mu.Lock()
	lead := len(g.waiting) == 0
	if lead {
		g.full = make(chan struct{})
	}
	g.waiting = append(g.waiting, c)
	g.nops += len(ops)
	full := g.full
	if !lead && g.nops >= maxLaterOps {
		// Closed once: the window is taken before another call joins
		// it only under g.mu, and a full one is not joined again.
		select {
		case <-full:
		default:
			close(full)
		}
	}
	alone := lead && g.nops >= maxLaterOps
	g.mu.Unlock()
	if !lead {
		<-c.done
		return c.res
	}
	if !alone {
		t := time.NewTimer(r.linger)
		select {
		case <-t.C:
		case <-full:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if g.hold != nil {
		g.hold()
	}
	g.mu.Lock()
	calls := g.waiting
	g.waiting, g.nops, g.full = nil, 0, nil
	g.mu.Unlock()
	var all []ClaimOp
	if len(calls) == 1 {
		all = calls[0].ops
	} else {
		all = make([]ClaimOp, 0, maxLaterOps)
		for _, c := range calls {
			all = append(all, c.ops...)
		}
	}
	// The time the ops are applied, not the first's arrival: an
	// outcome's backoff counts from now.
	res := r.ClaimOps(ctx, all, time.Now())
	for _, c := range calls {
		c.res, res = res[:len(c.ops):len(c.ops)], res[len(c.ops):]
		if c != calls[0] {
			close(c.done)
		}
	}
	return calls[0].res
}
