package feeds

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/internal/feedseries"
)

// metrics are the poll metrics of docs/ARCHITECTURE.md. Labels are the
// configured feed id and the bounded result class, never a URL.
type metrics struct {
	polls       *feedseries.Vec
	duration    *prometheus.HistogramVec
	bytes       *feedseries.Vec
	lastSuccess *feedseries.Vec
	configured  prometheus.Gauge
	gone        prometheus.Gauge
	moved       prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		// The per-feed series are feedseries vectors: a few dozen bytes
		// a series instead of client_golang's ~500 (docs/PERFORMANCE.md).
		polls: feedseries.NewCounter("feedworker_polls_total",
			"Feed polls by feed and result class.", "feed", "result"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "feedworker_fetch_duration_seconds",
			Help:    "Time to fetch and parse a feed, by result class.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"result"}),
		bytes: feedseries.NewCounter("feedworker_fetched_bytes_total",
			"Feed body bytes received, as transferred (before decompression).", "feed"),
		lastSuccess: feedseries.NewGauge("feedworker_last_successful_poll_timestamp_seconds",
			"Unix time of the last poll that ended in 200 (handled) or 304.", "feed"),
		configured: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "feedworker_feeds_configured",
			Help: "Feeds in the configuration that are enabled.",
		}),
		gone: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "feedworker_feeds_gone",
			Help: "Feeds that answered 410 Gone and are not polled until their configuration changes.",
		}),
		moved: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "feedworker_feeds_moved",
			Help: "Feeds whose last poll followed a permanent redirect (301/308); the status page shows the new URL.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.polls, m.duration, m.bytes, m.lastSuccess, m.configured, m.gone, m.moved} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register poll metrics: %w", err)
		}
	}
	return m, nil
}

// forget drops the series of a feed that left the configuration.
func (m *metrics) forget(feedID string) {
	l := prometheus.Labels{"feed": feedID}
	m.polls.DeletePartialMatch(l)
	m.bytes.DeletePartialMatch(l)
	m.lastSuccess.DeletePartialMatch(l)
}

// PollTotals is the number of polls by result class since the start, all
// feeds together.
func (p *Poller) PollTotals() map[string]float64 { return p.metrics.polls.Totals("result") }
