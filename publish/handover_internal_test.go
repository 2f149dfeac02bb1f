package publish

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// TestHandOverEndsWithHard: a sender whose outcome the hand-over cannot
// take (the store far behind, nobody reading) leaves once its hard
// context ends, with the outcome counted out as not recorded and not
// reported.
func TestHandOverEndsWithHard(t *testing.T) {
	p := &Publisher{}
	h := &handover{in: make(chan *storeReq), finished: make(chan struct{}, 1)}
	hard, cancel := context.WithCancel(context.Background())
	reported := make(chan struct{}, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		p.handOver(hard, slog.New(slog.DiscardHandler), job{}, dedupe.Settlement{Kind: dedupe.Retry}, nil, h, func() { reported <- struct{}{} })
	}()
	cancel()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Fatal("handOver still waiting for the hand-over a minute after its hard context ended")
	}
	h.wait()
	if !h.idle() {
		t.Errorf("%d outcomes in flight after handOver gave up; want 0", h.inFlight())
	}
	select {
	case <-reported:
		t.Error("an outcome never recorded was reported")
	default:
	}
}

// TestHandOverTakesRoomAfterGrace: once the grace is over, an outcome the
// hand-over has room for is still handed over (and so recorded), never
// given up on: a select with both cases ready would drop about half.
func TestHandOverTakesRoomAfterGrace(t *testing.T) {
	p := &Publisher{}
	hard, cancel := context.WithCancel(context.Background())
	cancel()
	const n = 200
	given := 0
	for range n {
		h := &handover{in: make(chan *storeReq, 1), finished: make(chan struct{}, 1)}
		p.handOver(hard, slog.New(slog.DiscardHandler), job{}, dedupe.Settlement{Kind: dedupe.Retry}, nil, h, nil)
		if len(h.in) == 0 {
			given++
		}
	}
	if given > 0 {
		t.Errorf("%d of %d outcomes given up on although the hand-over had room", given, n)
	}
}
