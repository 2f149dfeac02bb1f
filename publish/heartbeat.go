package publish

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// The heartbeat: while Run or a drain runs on a store shared by several
// processes ([dedupe.Heartbeats]), the process refreshes its heartbeat
// key (TTL Options.HeartbeatTTL, the worker's publish.lease_ttl), and
// learns which processes' heartbeats are gone: their claims are taken by
// the next claim at once, through the pending mark and look-up like any
// claimed item, instead of waiting out the claim TTL. ClaimTTL remains
// the bound for a process that is alive but stuck.
//
// Taking a dead process's items must not race a POST of its still in
// flight. A process sends nothing unless its heartbeat will outlast the
// send (its last refresh plus the TTL is later than now plus SendTimeout,
// which New keeps at most half the TTL), so by the time its heartbeat key
// has expired, every send it started has ended.

// errNoHeartbeat: the heartbeat could not be refreshed, so nothing is
// claimed or sent.
var errNoHeartbeat = errors.New("this worker's heartbeat could not be refreshed in the store")

// heartbeatEvery is how often the heartbeat is refreshed: a third of the
// TTL, and at least every 5s, so that a dead process is noticed within
// seconds of its key expiring.
func (p *Publisher) heartbeatEvery() time.Duration {
	return min(p.o.HeartbeatTTL/3, 5*time.Second)
}

// heartbeat is the heartbeat's state.
type heartbeat struct {
	mu   sync.Mutex
	ok   time.Time // when the last successful refresh began
	dead []string
}

// heartbeats returns the store's heartbeats, nil when it has none.
func (p *Publisher) heartbeats() dedupe.Heartbeats {
	hb, _ := p.store.(dedupe.Heartbeats)
	return hb
}

// beat refreshes the heartbeat once; it reports whether it succeeded.
func (p *Publisher) beat(ctx context.Context, hb dedupe.Heartbeats) bool {
	start := time.Now()
	var dead []string
	err := p.storeOp(ctx, "heartbeat", func(ctx context.Context) (err error) {
		dead, err = hb.OwnerHeartbeat(ctx, p.o.Owner, p.o.HeartbeatTTL, p.o.ClaimTTL+p.o.HeartbeatTTL)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("heartbeat failed; nothing is sent until it succeeds again", "cause", err)
		}
		return false
	}
	p.hb.mu.Lock()
	p.hb.ok = start
	fresh := slices.ContainsFunc(dead, func(d string) bool { return !slices.Contains(p.hb.dead, d) })
	p.hb.dead = dead
	p.hb.mu.Unlock()
	if fresh {
		p.log.Info("a worker's heartbeat is gone; its claimed items are taken over now", "dead", dead)
		p.wake()
	}
	return true
}

// runHeartbeat refreshes the heartbeat until ctx ends, then leaves.
func (p *Publisher) runHeartbeat(ctx context.Context, hb dedupe.Heartbeats) {
	t := time.NewTicker(p.heartbeatEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.beat(ctx, hb)
		}
	}
}

// alive reports whether a send of SendTimeout started now ends while this
// process's heartbeat surely lasts (always true without heartbeats).
func (p *Publisher) alive() bool {
	if p.heartbeats() == nil {
		return true
	}
	p.hb.mu.Lock()
	defer p.hb.mu.Unlock()
	return !p.hb.ok.IsZero() && time.Now().Add(p.o.SendTimeout).Before(p.hb.ok.Add(p.o.HeartbeatTTL))
}

// DeadOwnerItems counts the items due and still claimed by a worker whose
// heartbeat is gone: they wait for the next claim (0 without heartbeats).
func (p *Publisher) DeadOwnerItems(ctx context.Context) (int, error) {
	hb := p.heartbeats()
	if hb == nil {
		return 0, nil
	}
	return hb.DeadOwnerItems(ctx)
}
