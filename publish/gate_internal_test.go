package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
)

var errFailed = &acs.Error{Status: http.StatusServiceUnavailable}

// TestCircuitOpensOnlyOnWholeFailure: scattered failures, even one in
// two, never open the circuit; breakerFailures in a row do; while open no
// call is admitted; after the wait one probe goes, and its success
// closes the circuit.
func TestCircuitOpensOnlyOnWholeFailure(t *testing.T) {
	var g gate
	for i := range 1000 {
		var err error
		if i%2 == 0 {
			err = errFailed
		}
		g.record(false, err)
	}
	if s := g.state(); s.State != "closed" || s.Opens != 0 {
		t.Fatalf("after alternating failures: %+v; want closed", s)
	}
	// A Retry-After or a refused request says the service is up.
	for range 2 * breakerFailures {
		g.record(false, &acs.Error{Status: http.StatusServiceUnavailable, RetryAfter: time.Second})
		g.record(false, &acs.Error{Status: http.StatusBadRequest})
	}
	if s := g.state(); s.State != "closed" {
		t.Fatalf("after answers: %+v; want closed", s)
	}
	for range breakerFailures {
		g.record(false, errors.New("connection reset"))
	}
	if s := g.state(); s.State != "open" || s.Opens != 1 {
		t.Fatalf("after %d failures in a row: %+v; want open", breakerFailures, s)
	}
	ctx := context.Background()
	if _, err := g.admit(ctx); !errors.Is(err, errCircuitOpen) || !errors.Is(err, errNotSent) {
		t.Fatalf("admit while open: %v; want errCircuitOpen (not sent)", err)
	}
	if _, err := g.waitUntil(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	probe, err := g.admit(ctx)
	if err != nil || !probe {
		t.Fatalf("admit after the wait: probe %v, %v; want the probe", probe, err)
	}
	// A failed probe opens it again, for longer.
	g.record(true, errFailed)
	if s := g.state(); s.State != "open" {
		t.Fatalf("after a failed probe: %+v; want open", s)
	}
	if _, err := g.waitUntil(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if probe, err = g.admit(ctx); err != nil || !probe {
		t.Fatalf("second probe: %v, %v", probe, err)
	}
	g.record(true, nil)
	if s := g.state(); s.State != "closed" || s.FailuresInARow != 0 {
		t.Fatalf("after a good probe: %+v; want closed", s)
	}
	if probe, err = g.admit(ctx); err != nil || probe {
		t.Fatalf("admit when closed: probe %v, %v; want a plain call", probe, err)
	}
}

// TestResetRetriedSoon: a request we stopped waiting for may still run on
// the service (its look-up waits a send timeout), one whose connection
// was reset or closed does not.
func TestResetRetriedSoon(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{syscall.ECONNRESET, false},
		{io.ErrUnexpectedEOF, false},
	} {
		if got := mayStillRun(fmt.Errorf("acs: POST /v3/story: %w", tc.err)); got != tc.want {
			t.Errorf("mayStillRun(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}
