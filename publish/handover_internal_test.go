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
