package bench

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestWorkerReportCounts: the report sums the worker's counters across
// their labels.
func TestWorkerReportCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	polls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedworker_polls_total", Help: "h"}, []string{"result"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedworker_history_dropped_total", Help: "h"}, []string{"reason"})
	reg.MustRegister(polls, dropped)
	polls.WithLabelValues("ok").Add(3)
	polls.WithLabelValues("not_modified").Add(2)
	polls.WithLabelValues("error_http").Add(1)
	dropped.WithLabelValues("full").Add(7)
	dropped.WithLabelValues("error").Add(5)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := workerReport(mfs)
	want := WorkerReport{Polls: 6, NotModified: 2, Failed: 1, HistoryDropped: 12}
	if got != want {
		t.Errorf("report = %+v, want %+v", got, want)
	}
}
