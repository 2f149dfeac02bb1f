package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/feedworker/feedworker/acs"
)

// Readiness from real writes. The "api" check probes with a light read,
// which can succeed while every write fails; the "api writes" check reads
// the outcomes of the most recent writes themselves (POST, PUT, DELETE),
// so /readyz turns 503 as soon as they fail (a failed send reaches it
// within one send timeout, bounded by publish's SendTimeout) and back to 200 at the first
// write that succeeds. Where the spec is silent, these numbers decide:
const (
	// readyWindowSends and readyWindowAge bound the writes weighed: the
	// last 20, and only those of the last minute.
	readyWindowSends = 20
	readyWindowAge   = time.Minute
	// readyFailStreak writes failing in a row make the worker unready
	// even when the window holds more successes (a busy worker whose API
	// just broke); otherwise half the window must have failed.
	readyFailStreak = 3
)

// writeOutcome is one write attempt as the API client reported it.
type writeOutcome struct {
	at     time.Time
	failed bool
	cause  string
}

// writeWindow keeps the latest writes' outcomes, newest last.
type writeWindow struct {
	mu   sync.Mutex
	last []writeOutcome
}

func newWriteWindow() *writeWindow { return &writeWindow{} }

// isWrite tells the writes of items from reads and token requests.
func isWrite(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodDelete || method == http.MethodPatch
}

// writeFailed: no answer, or a server error. A 4xx is the item's problem
// (the API works), a 429 a request to slow down, which the pacer honours.
func writeFailed(info acs.RequestInfo) bool {
	return info.Status >= 500 || (info.Status == 0 && info.Err != nil)
}

// observe records one attempt of the API client (an acs.Hook).
func (ww *writeWindow) observe(info acs.RequestInfo) {
	if !isWrite(info.Method) || info.Route == "" || errors.Is(info.Err, context.Canceled) {
		return
	}
	o := writeOutcome{at: time.Now(), failed: writeFailed(info)}
	if o.failed {
		o.cause = fmt.Sprintf("%s %s: status %d", info.Method, info.Route, info.Status)
		if info.Err != nil {
			o.cause = fmt.Sprintf("%s %s: %v", info.Method, info.Route, info.Err)
		}
		if len(o.cause) > 300 {
			o.cause = o.cause[:300] + "…"
		}
	}
	ww.mu.Lock()
	defer ww.mu.Unlock()
	ww.last = append(ww.last, o)
	if n := len(ww.last); n > readyWindowSends {
		ww.last = append(ww.last[:0], ww.last[n-readyWindowSends:]...)
	}
}

// check is the "api writes" readiness check: nil while the latest write
// succeeded (or none was made), else an error naming how many of the
// recent writes failed and the last cause. The latest write counts at any
// age: while the publisher's circuit holds sends back, nothing newer can
// clear it.
func (ww *writeWindow) check(context.Context) error {
	return ww.verdict(time.Now())
}

func (ww *writeWindow) verdict(now time.Time) error {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	n := len(ww.last)
	if n == 0 || !ww.last[n-1].failed {
		return nil
	}
	streak, failed, weighed := 0, 0, 0
	for i := n - 1; i >= 0; i-- {
		o := ww.last[i]
		if i < n-1 && now.Sub(o.at) > readyWindowAge {
			break
		}
		weighed++
		if o.failed {
			failed++
			if streak == weighed-1 {
				streak++
			}
		}
	}
	if streak < readyFailStreak && 2*failed < weighed {
		return nil
	}
	return fmt.Errorf("%d of the last %d writes to the API failed (the latest %s ago: %s)",
		failed, weighed, now.Sub(ww.last[n-1].at).Round(time.Millisecond), ww.last[n-1].cause)
}
