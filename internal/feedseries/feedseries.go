// Package feedseries holds metrics labelled by feed in a few dozen bytes a
// series. client_golang's CounterVec and GaugeVec keep each series as its
// own metric with protobuf label pairs and a created timestamp, about 500
// bytes; with five or six per-feed series per configured feed that was
// 3 KiB a feed, the largest part of the worker's static memory at 20,000
// feeds and more (docs/PERFORMANCE.md). Here a series is a map entry and a
// value; the exposition is built only when the registry is scraped.
package feedseries

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Vec is a counter or a gauge with labels. The zero value is not usable:
// make one with NewCounter or NewGauge.
type Vec struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	labels []string

	mu     sync.RWMutex
	series map[string]*Series
}

// Series is one series of a Vec.
type Series struct {
	vec  *Vec
	key  string        // the label values joined by sep (the map's key, shared)
	bits atomic.Uint64 // math.Float64bits of the value
}

// NewCounter is a counter vector named name with the label names labels.
func NewCounter(name, help string, labels ...string) *Vec {
	return newVec(name, help, prometheus.CounterValue, labels)
}

// NewGauge is a gauge vector named name with the label names labels.
func NewGauge(name, help string, labels ...string) *Vec {
	return newVec(name, help, prometheus.GaugeValue, labels)
}

func newVec(name, help string, typ prometheus.ValueType, labels []string) *Vec {
	return &Vec{
		desc:   prometheus.NewDesc(name, help, labels, nil),
		typ:    typ,
		labels: labels,
		series: make(map[string]*Series),
	}
}

// sep joins label values in a key: a byte that cannot appear in valid
// UTF-8. Keeping only the joined key (not the values apart as well) is
// what makes a series small; the values are split out at scrape time.
const sep = "\xff"

func key(values []string) string { return strings.Join(values, sep) }

// values are the series' label values, in the order of the label names.
func (s *Series) values() []string { return strings.Split(s.key, sep) }

// WithLabelValues is the series of these label values (one per label name,
// in order), created at zero if it does not exist yet.
func (v *Vec) WithLabelValues(values ...string) *Series {
	if len(values) != len(v.labels) {
		panic("feedseries: " + v.desc.String() + ": wrong number of label values")
	}
	k := key(values)
	v.mu.RLock()
	s, ok := v.series[k]
	v.mu.RUnlock()
	if ok {
		return s
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.series[k]; ok {
		return s
	}
	s = &Series{vec: v, key: k}
	v.series[k] = s
	return s
}

// DeleteLabelValues removes the series of these label values; it reports
// whether there was one.
func (v *Vec) DeleteLabelValues(values ...string) bool {
	k := key(values)
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.series[k]
	delete(v.series, k)
	return ok
}

// DeletePartialMatch removes every series whose labels include these
// label values, and returns how many it removed.
func (v *Vec) DeletePartialMatch(labels prometheus.Labels) int {
	want := make(map[int]string, len(labels))
	for name, val := range labels {
		i := slices.Index(v.labels, name)
		if i < 0 {
			return 0 // a label this vector does not have matches nothing
		}
		want[i] = val
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for k, s := range v.series {
		match := true
		values := s.values()
		for i, val := range want {
			if values[i] != val {
				match = false
				break
			}
		}
		if match {
			delete(v.series, k)
			n++
		}
	}
	return n
}

// Totals sums the series by their value of the label name: what a
// summary needs, without building every series' exposition as a Gather
// does (hundreds of bytes a series, tens of MB at 20,000 feeds). A name
// the vector does not have gives nil.
func (v *Vec) Totals(name string) map[string]float64 {
	i := slices.Index(v.labels, name)
	if i < 0 {
		return nil
	}
	out := map[string]float64{}
	v.mu.RLock()
	defer v.mu.RUnlock()
	for k, s := range v.series {
		val := k
		for range i {
			_, val, _ = strings.Cut(val, sep)
		}
		val, _, _ = strings.Cut(val, sep)
		out[val] += s.Value()
	}
	return out
}

// Describe implements prometheus.Collector.
func (v *Vec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector.
func (v *Vec) Collect(ch chan<- prometheus.Metric) {
	v.mu.RLock()
	list := make([]*Series, 0, len(v.series))
	for _, s := range v.series {
		list = append(list, s)
	}
	v.mu.RUnlock()
	for _, s := range list {
		s.Collect(ch)
	}
}

// Add adds d to the series (a counter must not be given a negative d).
func (s *Series) Add(d float64) {
	if s.vec.typ == prometheus.CounterValue && d < 0 {
		panic("feedseries: counter " + s.vec.desc.String() + " cannot decrease")
	}
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Inc adds 1 to the series.
func (s *Series) Inc() { s.Add(1) }

// Set sets a gauge's series to f.
func (s *Series) Set(f float64) {
	if s.vec.typ != prometheus.GaugeValue {
		panic("feedseries: Set on counter " + s.vec.desc.String())
	}
	s.bits.Store(math.Float64bits(f))
}

// Value is the series' current value.
func (s *Series) Value() float64 { return math.Float64frombits(s.bits.Load()) }

// Describe implements prometheus.Collector, so that one series can be read
// on its own (testutil.ToFloat64).
func (s *Series) Describe(ch chan<- *prometheus.Desc) { ch <- s.vec.desc }

// Collect implements prometheus.Collector.
func (s *Series) Collect(ch chan<- prometheus.Metric) {
	m, err := prometheus.NewConstMetric(s.vec.desc, s.vec.typ, s.Value(), s.values()...)
	if err != nil {
		// A label value that is not valid UTF-8: the scrape reports it
		// rather than the process panicking in a collector.
		m = prometheus.NewInvalidMetric(s.vec.desc, err)
	}
	ch <- m
}
