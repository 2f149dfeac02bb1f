package publish

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/feedworker/feedworker/internal/feedseries"
)

// metrics are the publisher's collectors (names in docs/ARCHITECTURE.md).
type metrics struct {
	items       *feedseries.Vec // by feed: compact series (docs/PERFORMANCE.md)
	requests    *prometheus.CounterVec
	storeDur    *prometheus.HistogramVec
	storeErrs   *prometheus.CounterVec
	outboxDepth prometheus.Gauge
	deadLetters prometheus.Gauge
	unreadable  *feedseries.Vec
	backlogWait prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		items: feedseries.NewCounter("feedworker_items_total",
			"Feed items by outcome: seen (recorded without publishing), new, duplicate, updated, filtered, failed.",
			"feed", "outcome"),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_publish_requests_total",
			Help: "Deliveries to the API by content type and outcome: created, updated, recovered, retry, dead_letter, removed, deleted.",
		}, []string{"type", "outcome"}),
		storeDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "feedworker_store_operation_duration_seconds",
			Help:    "Duration of dedupe store operations.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"op"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_store_errors_total",
			Help: "Failed dedupe store operations.",
		}, []string{"op"}),
		outboxDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "feedworker_outbox_depth",
			Help: "Items queued for delivery, due or waiting for a retry.",
		}),
		deadLetters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "feedworker_dead_letters",
			Help: "Items whose delivery failed permanently, waiting for feedworker deadletters retry.",
		}),
		unreadable: feedseries.NewCounter("feedworker_unreadable_answers_total",
			"2xx answers of the API whose body could not be read, by feed and cause (the offending field, or body).",
			"feed", "cause"),
		backlogWait: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedworker_backlog_waits_total",
			Help: "Fetches whose items waited for deliveries to catch up before being queued (publish.max_backlog).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	// feedworker_items_total is defined here only: the worker counts its
	// filtered and failed outcomes through Publisher.CountItems.
	for _, c := range []prometheus.Collector{m.items, m.requests, m.storeDur, m.storeErrs, m.outboxDepth, m.deadLetters, m.unreadable, m.backlogWait} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// ItemTotals is the number of feed items by outcome since the start, all
// feeds together.
func (p *Publisher) ItemTotals() map[string]float64 { return p.m.items.Totals("outcome") }

// RequestTotals is the number of deliveries by outcome and content type
// since the start: RequestTotals()["created"]["story"].
func (p *Publisher) RequestTotals() map[string]map[string]float64 {
	ch := make(chan prometheus.Metric)
	go func() {
		p.m.requests.Collect(ch)
		close(ch)
	}()
	out := map[string]map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			continue // a counter of this vector always writes
		}
		var typ, outcome string
		for _, l := range d.GetLabel() {
			switch l.GetName() {
			case "type":
				typ = l.GetValue()
			case "outcome":
				outcome = l.GetValue()
			}
		}
		if out[outcome] == nil {
			out[outcome] = map[string]float64{}
		}
		out[outcome][typ] += d.GetCounter().GetValue()
	}
	return out
}
