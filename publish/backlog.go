package publish

import (
	"context"
	"sync"
	"time"
)

// backlog bounds how far polling queues ahead of delivery. A pass that
// accepts items faster than the API takes them would otherwise hold them
// all in the outbox at once: at 5,000 feeds × 20 items the embedded
// store's file grew to nearly 500 MB, all of it mapped into the worker.
// Accept waits while this process has more than limit items queued and
// not yet delivered, so the outbox holds about limit items at a time and
// the pass takes no longer (delivery was the slower side anyway).
//
// The count is this process's: items it queued, less items its senders
// finished (published, dead-lettered, left alone). Replicas sharing an
// outbox finish about as many as they queue, and the count is capped at the
// store's outbox depth whenever the gauges are refreshed (every
// StatsInterval while delivering). So that a wait never blocks
// polling for good (the API down, items retrying far ahead, another
// process delivering), a wait gives up after stall without a delivery
// finishing, and then no Accept waits until one does.
type backlog struct {
	limit int
	stall time.Duration

	mu      sync.Mutex
	n       int
	senders int  // delivery loops running
	stalled bool // a wait gave up; none waits until progress
	waiting int  // Accepts in wait
	// progress is closed (and replaced) when waiting Accepts may go on:
	// the count fell to the limit. Waking every waiter at each item
	// delivered, to find the count still over, cost a pass thousands of
	// wake-ups for nothing.
	progress   chan struct{}
	lastFinish time.Time // when an item last finished
}

// backlogStall is how long Accept waits without a delivery finishing.
const backlogStall = 5 * time.Second

func newBacklog(limit int) *backlog {
	return &backlog{limit: limit, stall: backlogStall, progress: make(chan struct{})}
}

// running counts a delivery loop in (+1) or out (-1): with none running,
// nothing drains the outbox here and Accept never waits.
func (b *backlog) running(d int) {
	b.mu.Lock()
	b.senders += d
	b.mu.Unlock()
}

// queued counts k items queued by Accept.
func (b *backlog) queued(k int) {
	if k <= 0 {
		return
	}
	b.mu.Lock()
	b.n += k
	b.mu.Unlock()
}

// atMost caps the count at the store's outbox depth: what other processes
// delivered of this one's items never counted down here.
func (b *backlog) atMost(depth int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n > depth {
		b.n = max(depth, 0)
		close(b.progress)
		b.progress = make(chan struct{})
	}
}

// finished counts one item delivered for good.
func (b *backlog) finished() {
	b.mu.Lock()
	if b.n > 0 {
		b.n--
	}
	b.stalled = false
	b.lastFinish = time.Now()
	if b.waiting > 0 && b.n <= b.limit {
		close(b.progress)
		b.progress = make(chan struct{})
	}
	b.mu.Unlock()
}

// wait blocks while the backlog is over its limit and deliveries make
// progress; it reports whether it waited at all.
func (b *backlog) wait(ctx context.Context) (waited bool, err error) {
	if b.limit <= 0 {
		return false, nil
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	start := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.n <= b.limit || b.senders == 0 || b.stalled {
			return waited, nil
		}
		// The stall is counted from the wait's start or the last item
		// finished, whichever is later.
		left := b.stall - time.Since(start)
		if b.lastFinish.After(start) {
			left = b.stall - time.Since(b.lastFinish)
		}
		if left <= 0 {
			b.stalled = true
			continue
		}
		progress := b.progress
		b.waiting++
		b.mu.Unlock()
		waited = true
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		var err error
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-progress:
		case <-timer.C:
		}
		b.mu.Lock()
		b.waiting--
		if err != nil {
			return waited, err
		}
	}
}
