package feeds

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/feedworker/feedworker/config"
)

// testGate is a store that is down until opened.
type testGate struct {
	mu   sync.Mutex
	up   bool
	back chan struct{}
}

func (g *testGate) Up() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.up }

func (g *testGate) Wait(ctx context.Context) error {
	select {
	case <-g.back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *testGate) open() { g.mu.Lock(); g.up = true; close(g.back); g.mu.Unlock() }

// TestPollerFetchesNothingWhileTheStoreIsDown: with the store down, Run
// fetches no feed however overdue; once it is back, every feed is polled
// again (within the spread window).
func TestPollerFetchesNothingWhileTheStoreIsDown(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, etagFeed)
	p := newTestPoller(t, config.HTTP{}, newTestHandler(), nil)
	gate := &testGate{back: make(chan struct{})}
	p.store = gate
	p.Update([]config.Feed{testFeed("a", srv.URL+"/a", time.Millisecond), testFeed("b", srv.URL+"/b", time.Millisecond)})
	p.run(t)
	// Long enough for many polls of each feed, were any allowed.
	time.Sleep(300 * time.Millisecond)
	if n := srv.count("/a") + srv.count("/b"); n != 0 {
		t.Fatalf("%d fetches while the store was down; want none", n)
	}
	gate.open()
	deadline := time.Now().Add(storeSpread + 20*time.Second)
	for srv.count("/a") == 0 || srv.count("/b") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("feeds fetched after the store came back: a %d, b %d; want both", srv.count("/a"), srv.count("/b"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
