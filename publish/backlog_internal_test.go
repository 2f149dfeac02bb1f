package publish

import (
	"context"
	"testing"
	"time"
)

// TestBacklogWakesAtTheLimit checks that a waiting Accept goes on once
// deliveries bring the count down to the limit, and that deliveries
// leaving it above the limit do not let it through.
func TestBacklogWakesAtTheLimit(t *testing.T) {
	b := newBacklog(2)
	b.stall = time.Hour
	b.running(1)
	b.queued(4)
	done := make(chan bool, 1)
	go func() {
		waited, err := b.wait(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- waited
	}()
	b.finished() // 3 left: over the limit
	select {
	case <-done:
		t.Fatal("wait returned with the backlog over its limit")
	case <-time.After(50 * time.Millisecond):
	}
	b.finished() // 2: at the limit
	select {
	case waited := <-done:
		if !waited {
			t.Error("wait reports it did not wait")
		}
	case <-time.After(time.Minute):
		t.Fatal("wait still blocked a minute after the backlog fell to its limit")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting != 0 {
		t.Errorf("%d waiters counted after the wait returned", b.waiting)
	}
}
