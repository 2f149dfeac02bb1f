package worker

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// APIStatus is the status page's view of how the worker paces itself to
// the service: the adaptive rate, the service's refusals, and the
// publisher's circuit.
type APIStatus struct {
	// Rate is the pace now in requests per second (0: unpaced), Ceiling
	// api.rate_limit (0: none).
	Rate    float64 `json:"rate"`
	Ceiling float64 `json:"ceiling"`
	// Shared is true when every replica shares one budget.
	Shared bool `json:"shared"`
	// Limited counts 429 answers, Unavailable 503s with Retry-After.
	Limited     uint64 `json:"limited_429"`
	Unavailable uint64 `json:"unavailable_503"`
	// Waits counts requests that waited for the pace or a Retry-After.
	Waits         uint64     `json:"waits"`
	WaitedSeconds float64    `json:"waited_seconds"`
	HoldUntil     *time.Time `json:"retry_after_until,omitempty"`
	// Gate is the publisher's circuit: closed, open or probing.
	Gate         string     `json:"gate"`
	GateFailures int        `json:"gate_failures_in_a_row"`
	GateOpened   *time.Time `json:"gate_opened,omitempty"`
	GateOpens    uint64     `json:"gate_opens"`
}

// apiStatus reads the pacer and the gate.
func (w *Worker) apiStatus() *APIStatus {
	out := &APIStatus{Shared: w.cfg.API.SharedRateLimit && w.redis != nil}
	if w.pacer != nil {
		s := w.pacer.State()
		out.Ceiling, out.Limited, out.Unavailable, out.Waits = s.Ceiling, s.Limited, s.Unavailable, s.Waits
		out.WaitedSeconds = s.Waited.Seconds()
		if !math.IsInf(s.Rate, 1) {
			out.Rate = s.Rate
		}
		if time.Now().Before(s.HoldUntil) {
			t := s.HoldUntil
			out.HoldUntil = &t
		}
	}
	if w.pub != nil {
		g := w.pub.GateState()
		out.Gate, out.GateFailures, out.GateOpens = g.State, g.FailuresInARow, g.Opens
		if !g.OpenedAt.IsZero() {
			t := g.OpenedAt
			out.GateOpened = &t
		}
	}
	return out
}

// registerAPIMetrics exports the pacer's state. The acs package has no
// Prometheus in it: the metrics read its State.
func (w *Worker) registerAPIMetrics(reg prometheus.Registerer) {
	p := w.pacer
	if p == nil {
		return
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "feedworker_api_rate_limit_current",
			Help: "The adaptive API request rate now, in requests per second (0: unpaced); api.rate_limit is its ceiling.",
		}, func() float64 {
			if r := p.State().Rate; !math.IsInf(r, 1) {
				return r
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "feedworker_api_refused_total",
			Help: "API answers that refused a request to slow the worker down: 429, and 503 with Retry-After.",
		}, func() float64 { s := p.State(); return float64(s.Limited + s.Unavailable) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "feedworker_api_rate_limited_total",
			Help: "API answers 429 (too many requests).",
		}, func() float64 { return float64(p.State().Limited) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "feedworker_api_rate_waits_total",
			Help: "API requests that waited for the adaptive rate or a Retry-After before being sent.",
		}, func() float64 { return float64(p.State().Waits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "feedworker_api_rate_wait_seconds_total",
			Help: "Time API requests spent waiting for the adaptive rate or a Retry-After.",
		}, func() float64 { return p.State().Waited.Seconds() }),
	)
}

// budgetWarn limits the warning about an unreachable shared budget to one
// a minute: it can fail on every request while Redis is down.
type budgetWarn struct {
	mu   sync.Mutex
	last time.Time
}

// budgetError hears a failure of the shared rate budget: the request is
// paced locally instead.
func (w *Worker) budgetError(err error) {
	w.budgetWarn.mu.Lock()
	defer w.budgetWarn.mu.Unlock()
	if time.Since(w.budgetWarn.last) < time.Minute {
		return
	}
	w.budgetWarn.last = time.Now()
	w.log.Warn("shared API rate budget unreachable; pacing this replica alone meanwhile", "err", err)
}
