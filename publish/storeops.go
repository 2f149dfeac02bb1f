package publish

import (
	"context"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// storeReq is store operations waiting for flushOps, to be applied in one
// round trip.
type storeReq struct {
	ops  []dedupe.ClaimOp
	res  []dedupe.ClaimResult
	done chan struct{} // closed when res is set (flushOps)
	// then is called with res instead (flushLater: nobody waits).
	then func(res []dedupe.ClaimResult)
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
		batch, ops := gatherOps(first, in)
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

// gatherOps takes first and whatever else waits in in, up to maxOpBatch
// operations, and returns them with their operations in order.
func gatherOps(first *storeReq, in <-chan *storeReq) ([]*storeReq, []dedupe.ClaimOp) {
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
	return batch, ops
}
