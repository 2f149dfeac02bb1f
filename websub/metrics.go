package websub

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	subs          *prometheus.GaugeVec
	requests      *prometheus.CounterVec
	verifications *prometheus.CounterVec
	deliveries    *prometheus.CounterVec
	accept        prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		subs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "feedworker_websub_subscriptions",
			Help: "WebSub subscriptions of the configured feeds by state: pending, active, unsubscribing, denied, failed.",
		}, []string{"state"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_websub_requests_total",
			Help: "Subscription requests sent to hubs, by mode (subscribe, unsubscribe) and result (accepted, error).",
		}, []string{"mode", "result"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_websub_verifications_total",
			Help: "Verification requests from hubs, by mode and result (ok, refused).",
		}, []string{"mode", "result"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_websub_deliveries_total",
			Help: "Content pushed by hubs, by result: ok, unsigned, bad_signature, unknown, too_large, error.",
		}, []string{"result"}),
		accept: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedworker_websub_delivery_seconds",
			Help:    "Seconds from a hub's delivery to its items being durable in the outbox, mapped and deduplicated.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.subs, m.requests, m.verifications, m.deliveries, m.accept} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("websub metrics: %w", err)
		}
	}
	return m, nil
}
