package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
)

// TestWriteWindowVerdict: the latest write decides whether the worker can
// be ready; three failures in a row, or half the window, make it unready;
// reads, 4xx answers and cancelled requests do not count.
func TestWriteWindowVerdict(t *testing.T) {
	t.Parallel()
	ok := acs.RequestInfo{Method: "POST", Route: "/v3/story", Status: 201}
	bad := acs.RequestInfo{Method: "POST", Route: "/v3/story", Status: 503, Err: errors.New("service unavailable")}
	ww := newWriteWindow()
	if err := ww.verdict(time.Now()); err != nil {
		t.Fatalf("no writes yet: %v", err)
	}
	for range 10 {
		ww.observe(ok)
	}
	ww.observe(bad)
	ww.observe(bad)
	if err := ww.verdict(time.Now()); err != nil {
		t.Errorf("2 failures after 10 successes: %v, want ready", err)
	}
	// Neither reads, 4xx answers nor cancellations are failed writes.
	ww.observe(acs.RequestInfo{Method: "GET", Route: "/v3/story", Status: 500})
	ww.observe(acs.RequestInfo{Method: "POST", Route: "/v3/story", Status: 422, Err: errors.New("invalid")})
	ww.observe(acs.RequestInfo{Method: "POST", Route: "/v3/story", Err: context.Canceled})
	if err := ww.verdict(time.Now()); err != nil {
		t.Errorf("after a 422: %v, want ready", err)
	}
	ww.observe(bad)
	ww.observe(bad)
	ww.observe(bad)
	err := ww.verdict(time.Now())
	if err == nil || !strings.Contains(err.Error(), "POST /v3/story") || !strings.Contains(err.Error(), "5 of the last 16 writes") {
		t.Errorf("three failures in a row: %v, want unready naming the cause", err)
	}
	// The latest write counts however old it is: a circuit holding sends
	// back does not make the worker ready again.
	if err := ww.verdict(time.Now().Add(time.Hour)); err == nil {
		t.Error("an hour after the last failed write: ready, want unready until a write succeeds")
	}
	ww.observe(ok)
	if err := ww.verdict(time.Now()); err != nil {
		t.Errorf("after a successful write: %v, want ready", err)
	}
	// On a quiet worker one failure is half the window.
	quiet := newWriteWindow()
	quiet.observe(bad)
	if err := quiet.verdict(time.Now()); err == nil {
		t.Error("the only write failed: ready, want unready")
	}
}
