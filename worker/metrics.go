package worker

import (
	"context"
	"errors"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/acs"
)

// metrics are the worker's own collectors; feeds and publish register
// theirs (feedworker_items_total is publish's, see Publisher.CountItems).
type metrics struct {
	apiDuration *prometheus.HistogramVec
	reloads     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, version string) *metrics {
	m := &metrics{
		apiDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "feedworker_api_request_duration_seconds",
			Help:    "Duration of API requests by method, route template and status class (error: no answer).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "status_class"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_config_reloads_total",
			Help: "Configuration reloads by result (ok, invalid).",
		}, []string{"result"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "feedworker_build_info",
		Help: "Build information; the value is always 1.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(m.apiDuration, m.reloads, build)
	// Both results exist from the start, so a rate() over them works at once.
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("invalid")
	return m
}

// apiHook turns the client's per-request report into the duration histogram.
func (m *metrics) apiHook(_ context.Context, info acs.RequestInfo) {
	class := "error"
	if info.Status > 0 {
		class = strconv.Itoa(info.Status/100) + "xx"
	} else if errors.Is(info.Err, context.Canceled) {
		class = "canceled"
	}
	m.apiDuration.WithLabelValues(info.Method, info.Route, class).Observe(info.Duration.Seconds())
}
