package feedseries

import (
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestExposition: what a scrape shows is what client_golang's own vectors
// would show for the same updates, deletions included.
func TestExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	polls := NewCounter("x_polls_total", "Polls.", "feed", "result")
	last := NewGauge("x_last_seconds", "Last.", "feed")
	reg.MustRegister(polls, last)

	var wg sync.WaitGroup
	for range 8 { // concurrent updates of the same series are all counted
		wg.Go(func() {
			for range 100 {
				polls.WithLabelValues("a", "ok").Inc()
			}
		})
	}
	wg.Wait()
	polls.WithLabelValues("b", "ok").Add(2.5)
	polls.WithLabelValues("b", "http").Inc()
	polls.WithLabelValues("c", "ok").Inc()
	last.WithLabelValues("a").Set(1700000000)
	last.WithLabelValues("c").Set(5)

	if n := polls.DeletePartialMatch(prometheus.Labels{"feed": "c"}); n != 1 {
		t.Errorf("DeletePartialMatch(feed=c) removed %d, want 1", n)
	}
	if n := polls.DeletePartialMatch(prometheus.Labels{"nope": "c"}); n != 0 {
		t.Errorf("DeletePartialMatch on an unknown label removed %d, want 0", n)
	}
	if !last.DeleteLabelValues("c") || last.DeleteLabelValues("c") {
		t.Error("DeleteLabelValues: want true, then false")
	}

	want := `
# HELP x_last_seconds Last.
# TYPE x_last_seconds gauge
x_last_seconds{feed="a"} 1.7e+09
# HELP x_polls_total Polls.
# TYPE x_polls_total counter
x_polls_total{feed="a",result="ok"} 800
x_polls_total{feed="b",result="http"} 1
x_polls_total{feed="b",result="ok"} 2.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(polls.WithLabelValues("b", "ok")); got != 2.5 {
		t.Errorf("one series read alone = %v, want 2.5", got)
	}
}

// TestCounterCannotDecrease: a negative Add on a counter is a programming
// error, as with client_golang's counters.
func TestCounterCannotDecrease(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Add(-1) on a counter did not panic")
		}
	}()
	NewCounter("x_total", "X.", "feed").WithLabelValues("a").Add(-1)
}

// TestTotals: the sums by one label are those of the series' values, for
// the first label and a later one.
func TestTotals(t *testing.T) {
	polls := NewCounter("x_polls_total", "Polls.", "feed", "result", "kind")
	polls.WithLabelValues("a", "ok", "x").Add(2)
	polls.WithLabelValues("b", "ok", "y").Add(3)
	polls.WithLabelValues("b", "http", "y").Inc()
	polls.WithLabelValues("c", "", "x").Add(4)
	for _, tt := range []struct {
		label string
		want  map[string]float64
	}{
		{"feed", map[string]float64{"a": 2, "b": 4, "c": 4}},
		{"result", map[string]float64{"ok": 5, "http": 1, "": 4}},
		{"kind", map[string]float64{"x": 6, "y": 4}},
	} {
		got := polls.Totals(tt.label)
		if len(got) != len(tt.want) {
			t.Errorf("Totals(%s) = %v, want %v", tt.label, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("Totals(%s) = %v, want %v", tt.label, got, tt.want)
				break
			}
		}
	}
	if got := polls.Totals("nope"); got != nil {
		t.Errorf("Totals of an unknown label = %v, want nil", got)
	}
}
