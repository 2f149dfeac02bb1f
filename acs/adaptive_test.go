package acs

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// newPaced returns a client on rec paced by a, making one attempt per call
// (as the worker's client does), so every 429 reaches the caller.
func newPaced(t *testing.T, rec *recorder, a *AdaptiveRate) *Client {
	t.Helper()
	return newTestClient(t, rec, WithAdaptiveRate(a), WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
}

func mustAdaptive(t *testing.T, o AdaptiveOptions) *AdaptiveRate {
	t.Helper()
	a, err := NewAdaptiveRate(o)
	if err != nil {
		t.Fatalf("NewAdaptiveRate: %v", err)
	}
	return a
}

// TestAdaptiveRateCutsAndHoldsOnRefusal: a 429 with Retry-After cuts the
// rate below the ceiling, is counted, and no request of the process
// starts before its Retry-After has passed.
func TestAdaptiveRateCutsAndHoldsOnRefusal(t *testing.T) {
	// Not parallel: its hold of a second would keep a parallel slot
	// from the tests that compute a Retry-After date before they pause.
	var mu sync.Mutex
	var refusedAt time.Time
	var starts []time.Time
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		if n == 2 {
			w.Header().Set("Retry-After", "1")
			mu.Lock()
			refusedAt = time.Now()
			mu.Unlock()
			reply(w, http.StatusTooManyRequests, `{"message":"slow down"}`)
			return
		}
		reply(w, 200, oneReply)
	})
	a := mustAdaptive(t, AdaptiveOptions{Ceiling: 1000})
	c := newPaced(t, rec, a)
	ctx := context.Background()
	var limited int
	for range 6 {
		err := call3(ctx, c, http.MethodGet)
		if errors.Is(err, ErrRateLimited) {
			limited++
		} else if err != nil {
			t.Fatalf("GET: %v", err)
		}
	}
	if limited != 1 {
		t.Fatalf("%d calls were refused; want 1", limited)
	}
	s := a.State()
	if s.Limited != 1 || s.Cuts != 1 {
		t.Errorf("state %+v: want 1 refusal counted and 1 cut", s)
	}
	if !(s.Rate < 1000) {
		t.Errorf("rate %v after a 429; want below the ceiling 1000", s.Rate)
	}
	if s.Waits == 0 {
		t.Errorf("state %+v: the request after the 429 waited, want it counted", s)
	}
	mu.Lock()
	defer mu.Unlock()
	// The server saw the request after the refusal no earlier than the
	// refusal's Retry-After from when it was answered.
	if got := starts[3].Sub(refusedAt); got < time.Second-10*time.Millisecond {
		t.Errorf("next request %v after a 429 with Retry-After 1; want at least 1s", got)
	}
}

// TestAdaptiveRateCeiling: answers raise the rate, never past the ceiling;
// without a ceiling it is unpaced until refused.
func TestAdaptiveRateCeiling(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, oneReply) })
	a := mustAdaptive(t, AdaptiveOptions{Ceiling: 500, Burst: 5})
	c := newPaced(t, rec, a)
	for range 20 {
		if err := call3(context.Background(), c, http.MethodGet); err != nil {
			t.Fatal(err)
		}
	}
	if r := a.State().Rate; r != 500 {
		t.Errorf("rate %v after answers; want the ceiling 500", r)
	}
	u := mustAdaptive(t, AdaptiveOptions{})
	if r := u.State().Rate; r < 1e300 {
		t.Errorf("rate without ceiling %v; want unpaced (+Inf)", r)
	}
	if _, err := NewAdaptiveRate(AdaptiveOptions{Ceiling: -1}); err == nil {
		t.Error("a negative ceiling was accepted")
	}
}

// TestAdaptiveRateHeaders: the service's rate-limit headers set the pace
// before it refuses anything, in each of the forms read.
func TestAdaptiveRateHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header map[string]string
		want   float64 // pace, requests per second
	}{
		{"policy", map[string]string{"RateLimit-Policy": "100;w=10"}, 10},
		{"policy structured", map[string]string{"RateLimit-Policy": `"default";q=60;w=60`}, 1},
		{"triple", map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "20", "RateLimit-Reset": "10"}, 2},
		{"combined old", map[string]string{"RateLimit": "limit=100, remaining=30, reset=10"}, 3},
		{"combined new", map[string]string{"RateLimit": `"default";r=40;t=10`}, 4},
		{"x-ratelimit", map[string]string{"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "50", "X-RateLimit-Reset": "10"}, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				reply(w, 200, oneReply)
			})
			a := mustAdaptive(t, AdaptiveOptions{Ceiling: 200})
			c := newPaced(t, rec, a)
			if err := call3(context.Background(), c, http.MethodGet); err != nil {
				t.Fatal(err)
			}
			if got := a.State().Rate; got < tc.want*0.9 || got > tc.want*1.1 {
				t.Errorf("pace %v after %v; want about %v", got, tc.header, tc.want)
			}
		})
	}
}

// TestAdaptiveRateQuotaExhausted: Remaining 0 holds every request until
// the reset, so the service is not asked while it would refuse.
func TestAdaptiveRateQuotaExhausted(t *testing.T) {
	// Not parallel: its hold of a second would keep a parallel slot
	// from the tests that compute a Retry-After date before they pause.
	var mu sync.Mutex
	var times []time.Time
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if n == 0 {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(1, 10))
		}
		reply(w, 200, oneReply)
	})
	a := mustAdaptive(t, AdaptiveOptions{Ceiling: 100})
	c := newPaced(t, rec, a)
	for range 2 {
		if err := call3(context.Background(), c, http.MethodGet); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if d := times[1].Sub(times[0]); d < 900*time.Millisecond {
		t.Errorf("second request %v after the quota ran out for 1s; want it held until the reset", d)
	}
}
