package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/feedworker/feedworker/internal/cputime"
)

// WorkerReport is what the worker process tells the bench at exit, read
// from its own metrics registry.
type WorkerReport struct {
	// Polls counts every poll; NotModified the 304s; Failed the polls that
	// ended in an error.
	Polls       int `json:"polls"`
	NotModified int `json:"not_modified"`
	Failed      int `json:"failed"`
	// RedisRoundTrips is feedworker_redis_round_trips_total.
	RedisRoundTrips int64 `json:"redis_round_trips"`
	// CountsRoundTrips is true when the worker has the counter (it has
	// one on Redis only).
	CountsRoundTrips bool `json:"counts_round_trips"`
	// HistoryDropped is feedworker_history_dropped_total, all reasons: the
	// console's records the pass lost.
	HistoryDropped int64 `json:"history_dropped"`
	// PeakRSSKB is the process's peak resident set (VmHWM), in KiB. It is
	// read by the process itself: the ru_maxrss the parent gets from wait4
	// counts the parent's own memory too, because Go starts children with
	// vfork and Linux carries the pre-exec high-water mark over the exec.
	PeakRSSKB int64 `json:"peak_rss_kb"`
	// Timing is the worker's own clock of its phases.
	Timing WorkerTiming `json:"timing"`
}

// WorkerTiming splits the worker process's life, so that the bench can
// tell the pass from what a process per cycle adds around it.
type WorkerTiming struct {
	// StartedUnixNano is when the worker's code began (after the exec and
	// the runtime's and packages' init), on the wall clock the bench
	// shares, to measure the start from the bench's side.
	StartedUnixNano int64 `json:"started_unix_ns"`
	// Setup is loading the config and building the worker (the store
	// opened, the API client made), seconds.
	Setup float64 `json:"setup_s"`
	// Pass is worker.Once: the polls, the deliveries, the history written
	// and the leases given back (seconds).
	Pass float64 `json:"pass_s"`
	// PassCPU is the process's user plus system time during Pass: close
	// to Pass times the cores it could use, the pass waits for CPU, not
	// for the network or the store.
	PassCPU float64 `json:"pass_cpu_s"`
}

// processCPU is this process's user plus system time so far (seconds).
func processCPU() float64 { return cputime.Self().Seconds() }

// WriteWorkerReport gathers g (the worker's registry) and writes the
// report, with t, to path. The bench's worker process calls it after its
// pass.
func WriteWorkerReport(path string, g prometheus.Gatherer, t WorkerTiming) error {
	// The peak before gathering: the worker's, not this report's (a Gather
	// builds every per-feed series, tens of MB at 20,000 feeds).
	peak, err := peakRSS()
	if err != nil {
		return err
	}
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather worker metrics: %w", err)
	}
	r := workerReport(mfs)
	r.Timing = t
	r.PeakRSSKB = peak
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode worker report: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write worker report: %w", err)
	}
	return nil
}

func workerReport(mfs []*dto.MetricFamily) WorkerReport {
	var r WorkerReport
	for _, mf := range mfs {
		switch mf.GetName() {
		case "feedworker_polls_total":
			for _, m := range mf.GetMetric() {
				v := int(m.GetCounter().GetValue())
				r.Polls += v
				switch label(m, "result") {
				case "ok":
				case "not_modified":
					r.NotModified += v
				default:
					r.Failed += v
				}
			}
		case "feedworker_history_dropped_total":
			for _, m := range mf.GetMetric() {
				r.HistoryDropped += int64(m.GetCounter().GetValue())
			}
		case "feedworker_redis_round_trips_total":
			for _, m := range mf.GetMetric() {
				r.RedisRoundTrips += int64(m.GetCounter().GetValue())
				r.CountsRoundTrips = true
			}
		}
	}
	return r
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// peakRSS reads this process's VmHWM from /proc/self/status.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak rss: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak rss: %q: %w", line, err)
			}
			return kb, nil
		}
	}
	return 0, errors.New("peak rss: no VmHWM in /proc/self/status")
}

func readWorkerReport(path string) (WorkerReport, error) {
	var r WorkerReport
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("worker report: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("worker report %s: %w", path, err)
	}
	return r, nil
}
