package acs

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Budget is a request budget shared with other processes (replicas of one
// worker), so that together they keep to one rate. Take asks for one
// request at rate requests per second with burst; it returns 0 when the
// request may go now, else how long to wait before asking again.
type Budget interface {
	Take(ctx context.Context, rate float64, burst int) (time.Duration, error)
}

// AdaptiveOptions configure [NewAdaptiveRate].
type AdaptiveOptions struct {
	// Ceiling is the most requests per second ever sent (0: no ceiling;
	// the pace is then set by the service's refusals and headers only).
	Ceiling float64
	// Burst is how many requests may go at once (default 1).
	Burst int
	// Budget, when set, is shared with other processes: every request
	// takes from it at the adaptive rate instead of from a local limiter.
	// A Budget that fails falls back to the local limiter for that request.
	Budget Budget
	// OnBudgetError, when set, hears every failure of Budget.
	OnBudgetError func(error)
}

// AIMD parameters. A refusal cuts the rate to decrease times what was
// really being sent over the last second (not the configured rate, which
// may be far above what the workers achieve); every answered request adds
// increase/rate, so the rate grows by about increase requests per second
// each second: slow enough that the service's limit is crossed rarely, so
// that few requests are refused (each refusal also stops every request for
// its Retry-After).
const (
	aimdDecrease = 0.75
	aimdFloor    = 0.5 // requests per second; never paced to a halt
	// aimdIncrease is the additive step per second, as a fraction of the
	// ceiling, and at least aimdMinIncrease.
	aimdIncrease    = 0.01
	aimdMinIncrease = 1.0
)

// AdaptiveRate paces the requests of every goroutine of a process. It
// keeps a ceiling and adapts below it: additive increase while answers
// come, multiplicative decrease on a refusal (429, or 503 with
// Retry-After); a Retry-After stops every request until it passes, exactly
// as long as asked; and the rate-limit headers the service sends (the IETF
// RateLimit and RateLimit-Policy fields, in their older -Limit, -Remaining,
// -Reset forms too, and the common X-RateLimit-* ones) set the pace before
// the service has to refuse. Use it with [WithAdaptiveRate]; it is safe
// for concurrent use.
type AdaptiveRate struct {
	ceiling float64
	burst   int
	budget  Budget
	onErr   func(error)
	lim     *rate.Limiter

	mu sync.Mutex
	// aimd is the rate the refusals taught; +Inf until the first one when
	// there is no ceiling.
	aimd float64
	// policy is the long-run rate the service's policy header states
	// (quota over window); 0: none seen.
	policy float64
	// paceUntil bounds pace, the rate that spreads the remaining quota
	// over the time to its reset; zero: none.
	pace      float64
	paceUntil time.Time
	// hold: no request starts before it (Retry-After, or an exhausted
	// quota until its reset).
	hold time.Time
	// lastCut is when the rate was last cut: refusals of requests sent
	// before it were answered to the old rate and do not cut again.
	lastCut time.Time
	// sent rings the start times of the last requests, to measure the
	// rate really sent.
	sent  [256]time.Time
	nSent int
	st    RateState
}

// RateState is what an [AdaptiveRate] reports, for metrics and status
// pages.
type RateState struct {
	// Ceiling is the configured most requests per second (0: none); Rate
	// is the pace now (+Inf: unpaced).
	Ceiling float64
	Rate    float64
	// Limited counts 429 answers, Unavailable 503 answers with
	// Retry-After: the service's refusals.
	Limited     uint64
	Unavailable uint64
	// Cuts counts decreases of the rate.
	Cuts uint64
	// Waits counts requests that had to wait for the pace or a hold, and
	// Waited sums their waits.
	Waits  uint64
	Waited time.Duration
	// HoldUntil is when a Retry-After or exhausted quota ends (zero or past:
	// none).
	HoldUntil time.Time
}

// NewAdaptiveRate returns a pacer starting at the ceiling.
func NewAdaptiveRate(o AdaptiveOptions) (*AdaptiveRate, error) {
	if !(o.Ceiling >= 0) || math.IsInf(o.Ceiling, 0) {
		return nil, fmt.Errorf("acs: adaptive rate: ceiling %v: want a non-negative number", o.Ceiling)
	}
	a := &AdaptiveRate{ceiling: o.Ceiling, burst: max(1, o.Burst), budget: o.Budget, onErr: o.OnBudgetError}
	a.aimd = o.Ceiling
	if a.aimd == 0 {
		a.aimd = math.Inf(1)
	}
	a.lim = rate.NewLimiter(rate.Limit(a.aimd), a.burst)
	return a, nil
}

// WithAdaptiveRate makes every attempt wait for a first and report its
// answer to it. It replaces [WithRateLimiter].
func WithAdaptiveRate(a *AdaptiveRate) Option {
	return func(c *Client) error {
		c.pacer = a
		return nil
	}
}

// State returns the pacer's current state.
func (a *AdaptiveRate) State() RateState {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.st
	s.Ceiling = a.ceiling
	s.Rate = a.effective(time.Now())
	s.HoldUntil = a.hold
	return s
}

// effective is the pace now: the least of the ceiling, what refusals
// taught, the service's policy and the pace of its remaining quota.
func (a *AdaptiveRate) effective(now time.Time) float64 {
	r := a.aimd
	if a.policy > 0 {
		r = min(r, a.policy)
	}
	if !a.paceUntil.IsZero() && now.Before(a.paceUntil) {
		r = min(r, a.pace)
	}
	return r
}

// apply sets the limiter to the effective rate; call with mu held.
func (a *AdaptiveRate) apply(now time.Time) {
	r := a.effective(now)
	if math.IsInf(r, 1) {
		a.lim.SetLimitAt(now, rate.Inf)
		return
	}
	a.lim.SetLimitAt(now, rate.Limit(r))
}

// Wait blocks until a request may start: past any hold, then within the
// pace (from the shared budget when there is one).
func (a *AdaptiveRate) Wait(ctx context.Context) error {
	start := time.Now()
	waited := false
	defer func() {
		if waited {
			a.mu.Lock()
			a.st.Waits++
			a.st.Waited += time.Since(start)
			a.mu.Unlock()
		}
	}()
	for {
		a.mu.Lock()
		now := time.Now()
		hold := a.hold
		if !a.paceUntil.IsZero() && !now.Before(a.paceUntil) {
			// The quota's window was reset: its pace no longer applies.
			a.paceUntil = time.Time{}
			a.apply(now)
		}
		r := a.effective(now)
		a.mu.Unlock()
		if d := hold.Sub(now); d > 0 {
			waited = true
			if err := sleepCtx(ctx, d); err != nil {
				return err
			}
			continue
		}
		if a.budget != nil && !math.IsInf(r, 1) {
			d, err := a.budget.Take(ctx, r, a.burst)
			if err == nil {
				if d <= 0 {
					break
				}
				waited = true
				if err := sleepCtx(ctx, d); err != nil {
					return err
				}
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if a.onErr != nil {
				a.onErr(err)
			}
			// The shared budget is unreachable: pace locally meanwhile.
		}
		res := a.lim.Reserve()
		if !res.OK() {
			return fmt.Errorf("acs: rate limit: burst %d cannot be reserved", a.burst)
		}
		if d := res.Delay(); d > 0 {
			waited = true
			if err := sleepCtx(ctx, d); err != nil {
				res.Cancel()
				return err
			}
		}
		// A hold that began while this request waited for the pace
		// stops it too.
		a.mu.Lock()
		held := time.Now().Before(a.hold)
		a.mu.Unlock()
		if !held {
			break
		}
	}
	a.mu.Lock()
	a.sent[a.nSent%len(a.sent)] = time.Now()
	a.nSent++
	a.mu.Unlock()
	return nil
}

// sentRate is how many requests started in the last second; call with mu
// held.
func (a *AdaptiveRate) sentRate(now time.Time) float64 {
	n := 0
	for i := 1; i <= min(a.nSent, len(a.sent)); i++ {
		if now.Sub(a.sent[(a.nSent-i)%len(a.sent)]) > time.Second {
			break
		}
		n++
	}
	return float64(n)
}

// observe learns from one answer to a request sent at sent: status 0 is
// no answer, which teaches nothing about the rate.
func (a *AdaptiveRate) observe(sent time.Time, status int, h http.Header, retryAfter time.Duration) {
	if status == 0 {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.readHeaders(now, h)
	refused := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && retryAfter > 0
	switch {
	case status == http.StatusTooManyRequests:
		a.st.Limited++
	case refused:
		a.st.Unavailable++
	}
	if refused {
		if retryAfter > 0 {
			if u := now.Add(retryAfter); u.After(a.hold) {
				a.hold = u
			}
		}
		if sent.Before(a.lastCut) {
			// Sent before the last cut: that cut already answered it.
			a.apply(now)
			return
		}
		base := min(a.aimd, max(a.sentRate(now), aimdFloor))
		a.aimd = max(aimdFloor, base*aimdDecrease)
		a.lastCut = now
		a.st.Cuts++
		a.apply(now)
		return
	}
	if !math.IsInf(a.aimd, 1) {
		step := max(aimdMinIncrease, a.ceiling*aimdIncrease)
		a.aimd += step / max(a.aimd, 1)
		if a.ceiling > 0 {
			a.aimd = min(a.aimd, a.ceiling)
		}
	}
	a.apply(now)
}

// readHeaders takes the service's own statement of its limit; call with
// mu held. Read: RateLimit-Policy ("100;w=60", or the newer
// `"name";q=100;w=60`), RateLimit ("limit=100, remaining=5, reset=10", or
// `"name";r=5;t=10`), RateLimit-Limit / -Remaining / -Reset and the same
// with X- in front (a reset over a billion is a Unix time).
func (a *AdaptiveRate) readHeaders(now time.Time, h http.Header) {
	if h == nil {
		return
	}
	// The names in canonical form (as http.CanonicalHeaderKey writes
	// them), which Get looks up without making them anew per answer.
	if q, w, ok := parsePolicy(h.Get("Ratelimit-Policy")); ok {
		a.policy = q / w.Seconds()
	}
	remaining, reset, ok := parseRateLimitField(h.Get("Ratelimit"), now)
	if !ok {
		remaining, reset, ok = parseRateLimitTriple(h, "Ratelimit-Remaining", "Ratelimit-Reset", now)
	}
	if !ok {
		remaining, reset, ok = parseRateLimitTriple(h, "X-Ratelimit-Remaining", "X-Ratelimit-Reset", now)
	}
	if !ok || reset <= 0 {
		return
	}
	if remaining <= 0 {
		// Nothing left until the reset: wait for it rather than be refused.
		if u := now.Add(reset); u.After(a.hold) {
			a.hold = u
		}
		return
	}
	a.pace = remaining / reset.Seconds()
	a.paceUntil = now.Add(reset)
}

// parsePolicy reads a quota and window from RateLimit-Policy; the first
// policy listed is taken.
func parsePolicy(v string) (float64, time.Duration, bool) {
	if v == "" {
		return 0, 0, false
	}
	v, _, _ = strings.Cut(v, ",")
	parts := strings.Split(v, ";")
	var q float64
	w := time.Duration(0)
	for i, p := range parts {
		p = strings.TrimSpace(p)
		k, val, isKV := strings.Cut(p, "=")
		switch {
		case !isKV && i == 0:
			if n, err := strconv.ParseFloat(p, 64); err == nil {
				q = n
			}
		case k == "q":
			if n, err := strconv.ParseFloat(val, 64); err == nil {
				q = n
			}
		case k == "w":
			if n, err := strconv.ParseFloat(val, 64); err == nil && n > 0 {
				w = time.Duration(n * float64(time.Second))
			}
		}
	}
	if q <= 0 || w <= 0 {
		return 0, 0, false
	}
	return q, w, true
}

// parseRateLimitField reads the combined RateLimit field: r (or remaining)
// and t (or reset) in seconds.
func parseRateLimitField(v string, now time.Time) (float64, time.Duration, bool) {
	if v == "" {
		return 0, 0, false
	}
	remaining, reset := -1.0, time.Duration(-1)
	for p := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ';' || r == ',' }) {
		k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "r", "remaining":
			if n, err := strconv.ParseFloat(val, 64); err == nil {
				remaining = n
			}
		case "t", "reset":
			reset = parseReset(val, now)
		}
	}
	if remaining < 0 || reset < 0 {
		return 0, 0, false
	}
	return remaining, reset, true
}

// parseRateLimitTriple reads the fields named remainingKey and resetKey
// (PREFIX-Remaining and PREFIX-Reset).
func parseRateLimitTriple(h http.Header, remainingKey, resetKey string, now time.Time) (float64, time.Duration, bool) {
	rs, ts := h.Get(remainingKey), h.Get(resetKey)
	if rs == "" || ts == "" {
		return 0, 0, false
	}
	remaining, err := strconv.ParseFloat(strings.TrimSpace(rs), 64)
	if err != nil || remaining < 0 {
		return 0, 0, false
	}
	reset := parseReset(ts, now)
	if reset < 0 {
		return 0, 0, false
	}
	return remaining, reset, true
}

// parseReset reads a reset as seconds from now, or as a Unix time when it
// is over a billion (as some X-RateLimit-Reset fields are); -1 when
// unreadable.
func parseReset(v string, now time.Time) time.Duration {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || n < 0 || math.IsInf(n, 0) {
		return -1
	}
	if n > 1e9 {
		return max(0, time.Unix(int64(n), 0).Sub(now))
	}
	return time.Duration(min(n, 86400) * float64(time.Second))
}
