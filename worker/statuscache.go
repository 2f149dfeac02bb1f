package worker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// statusBudget is how long the status page and /status.json wait on the
// store before answering from the last known state: they must answer
// within a second while the store hangs, exactly when an operator looks.
const statusBudget = 500 * time.Millisecond

// lastStatus is the last status read in full.
type lastStatus struct {
	mu sync.Mutex
	st *Status
}

// currentStatus is Status within statusBudget, or, while the store is
// down or slow, the last known state marked stale and naming the store
// as the cause. With no state known yet it returns the error.
func (w *Worker) currentStatus(ctx context.Context) (*Status, error) {
	problem := w.health.Problem()
	if problem == nil {
		// The read runs on its own: a store call slow to notice its
		// context must not hold the page past the budget.
		type answer struct {
			st  *Status
			err error
		}
		sctx, cancel := context.WithTimeout(ctx, statusBudget)
		defer cancel()
		done := make(chan answer, 1)
		go func() { st, err := w.Status(sctx); done <- answer{st, err} }()
		var st *Status
		var err error
		select {
		case a := <-done:
			st, err = a.st, a.err
		case <-sctx.Done():
			err = sctx.Err()
		}
		if err == nil {
			w.lastStatus.mu.Lock()
			w.lastStatus.st = st
			w.lastStatus.mu.Unlock()
			return st, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		problem = fmt.Errorf("%s did not answer within %s: %w", storeName(w.config()), statusBudget, err)
	}
	w.lastStatus.mu.Lock()
	last := w.lastStatus.st
	w.lastStatus.mu.Unlock()
	if last == nil {
		return nil, problem
	}
	stale := *last
	stale.Stale = true
	stale.StoreProblem = problem.Error()
	// What lives in memory is current; only the store's figures are old.
	stale.Pacing = w.apiStatus()
	return &stale, nil
}
