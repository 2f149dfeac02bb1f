package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cycle is what one cycle measured.
type Cycle struct {
	Cycle int `json:"cycle"`
	// Wall is from starting the worker process to its exit, when every
	// item due is confirmed by the API (seconds).
	Wall float64 `json:"wall_s"`
	// Phases splits Wall by the worker's own clock; Phases.Pass is the
	// pass alone.
	Phases Phases `json:"phases"`
	// CPU is the worker process's user plus system time (seconds).
	CPU float64 `json:"cpu_s"`
	// PeakRSSMB is the worker process's peak resident set (VmHWM, MiB).
	PeakRSSMB float64 `json:"peak_rss_mib"`
	// ItemsPerSec counts items created or updated on the API per second of
	// Wall; FeedsPerSec feeds polled per second of Wall.
	ItemsPerSec float64 `json:"items_per_s"`
	FeedsPerSec float64 `json:"feeds_per_s"`
	// FeedRequests and FeedNotModified count the farm's answers (all, and
	// 304s); APIRequests the sandbox's, token and look-ups included.
	FeedRequests    int64 `json:"feed_requests"`
	FeedNotModified int64 `json:"feed_not_modified"`
	APIRequests     int64 `json:"api_requests"`
	// FeedConns and APIConns count the TCP connections the worker opened
	// to the farm and to the API (fewer than requests: kept alive).
	FeedConns int64 `json:"feed_connections"`
	APIConns  int64 `json:"api_connections"`
	// APIRateLimited counts 429 answers.
	APIRateLimited int64 `json:"api_rate_limited"`
	// Created and Updated are the content writes the API confirmed.
	Created int `json:"created"`
	Updated int `json:"updated"`
	// Polls is the worker's count of feed polls.
	Polls int `json:"polls"`
	// RedisRoundTrips is the worker's count (a go-redis hook): each command
	// sent alone and each pipeline is one.
	RedisRoundTrips int64 `json:"redis_round_trips"`
	// RoundTripsPerPoll divides them by Polls; RoundTripsPerItem by the
	// items created or updated (zero when none).
	RoundTripsPerPoll float64 `json:"redis_round_trips_per_poll"`
	RoundTripsPerItem float64 `json:"redis_round_trips_per_item"`
	// HistoryDropped counts the history records (item fates, polls) the
	// worker did not keep: too many waiting for a write, or a failed one.
	HistoryDropped int64 `json:"history_dropped"`
	// DeliveredRate is confirmed writes per second between the first and
	// the last one; RateLimitRatio divides it by the API's rate limit (zero
	// without one).
	DeliveredRate  float64 `json:"delivered_per_s"`
	RateLimitRatio float64 `json:"delivered_vs_rate_limit"`
	// CPUPerItemUS is CPU divided by the items created or updated
	// (microseconds; zero when none).
	CPUPerItemUS float64 `json:"cpu_per_item_us"`
	// AfterRecovery is how long after an outage (Options.Outage) ended
	// the last write was confirmed (seconds; zero without one).
	AfterRecovery float64 `json:"delivered_after_recovery_s"`
	// Redis is Redis's own view of the cycle (Options.RedisStats; nil
	// otherwise). Medians keep the first run's.
	Redis *RedisStats `json:"redis,omitempty"`
}

// Phases splits a cycle's wall time (seconds). A process per cycle pays
// for its start, setup and exit every time; a running worker pays for
// them once, so the pass is what a poll interval costs it.
type Phases struct {
	// Start is from the bench starting the process to the worker's code
	// running (exec, the runtime's and packages' init).
	Start float64 `json:"start_s"`
	// Setup is the config loaded and the worker built (store opened).
	Setup float64 `json:"setup_s"`
	// Pass is worker.Once: the polls, the deliveries, the history written
	// and the leases given back; PassCPU the worker's CPU meanwhile.
	Pass    float64 `json:"pass_s"`
	PassCPU float64 `json:"pass_cpu_s"`
	// Exit is the rest: the report written, the worker closed (store
	// closed), the process gone.
	Exit float64 `json:"exit_s"`
}

// phasesOf splits wall, which began at start, by the worker's timing t;
// zero when the worker did not time itself.
func phasesOf(start time.Time, wall time.Duration, t WorkerTiming) Phases {
	if t.StartedUnixNano == 0 {
		return Phases{}
	}
	p := Phases{
		Start:   time.Unix(0, t.StartedUnixNano).Sub(start).Seconds(),
		Setup:   t.Setup,
		Pass:    t.Pass,
		PassCPU: t.PassCPU,
	}
	p.Exit = wall.Seconds() - p.Start - p.Setup - p.Pass
	return p
}

// derive fills the rates and ratios from the counts.
func (c *Cycle) derive(o Options, api apiCounts) {
	c.APIRateLimited = api.limited
	items := float64(c.Created + c.Updated)
	if c.Wall > 0 {
		c.ItemsPerSec = items / c.Wall
		c.FeedsPerSec = float64(c.Polls) / c.Wall
	}
	if c.Polls > 0 {
		c.RoundTripsPerPoll = float64(c.RedisRoundTrips) / float64(c.Polls)
	}
	if items > 0 {
		c.RoundTripsPerItem = float64(c.RedisRoundTrips) / items
		c.CPUPerItemUS = c.CPU / items * 1e6
	}
	if c.Redis != nil {
		if c.Polls > 0 {
			c.Redis.CommandsPerPoll = float64(c.Redis.Commands) / float64(c.Polls)
		}
		if items > 0 {
			c.Redis.CommandsPerItem = float64(c.Redis.Commands) / items
		}
	}
	if api.nwrites >= 2 {
		if d := api.last.Sub(api.first).Seconds(); d > 0 {
			// n confirmations span n-1 intervals.
			c.DeliveredRate = float64(api.nwrites-1) / d
		}
	}
	if o.RateLimit > 0 {
		c.RateLimitRatio = c.DeliveredRate / o.RateLimit
	}
}

// Report is a bench's outcome: per store, every run's cycles and their
// medians; the floor's; and the ratios between them.
type Report struct {
	Options ReportOptions `json:"options"`
	Machine Machine       `json:"machine"`
	Stores  []StoreResult `json:"stores"`
	Floor   FloorResult   `json:"gofeed_floor"`
	// Ratios are medians over the runs of ratios taken within each run.
	Ratios Ratios `json:"ratios"`
	// Targets are issue 13's goals that this run's shape measures.
	Targets []Target `json:"targets"`
}

// StoreResult is one store's cycles.
type StoreResult struct {
	Store string    `json:"store"`
	Runs  [][]Cycle `json:"runs"`
	// Median holds, per cycle, the median of each measure over the runs.
	Median []Cycle `json:"median"`
}

// FloorResult is the gofeed-only floor per run and its medians.
type FloorResult struct {
	Runs   []Floor `json:"runs"`
	Median Floor   `json:"median"`
}

// Ratios compare the stores and the floor, each the median over the runs
// of the ratio within one run (the machine's load changes between runs
// more than within one).
type Ratios struct {
	// EmbeddedVsRedisWall and EmbeddedVsRedisCPU divide the embedded
	// store's cycle 1 wall time and worker CPU by Redis's (zero unless
	// both were measured).
	EmbeddedVsRedisWall float64 `json:"embedded_vs_redis_wall"`
	EmbeddedVsRedisCPU  float64 `json:"embedded_vs_redis_cpu"`
	// EmbeddedVsRedisWithServer divides the embedded store's cycle 1
	// worker CPU by Redis's worker CPU plus the Redis server's CPU in that
	// cycle (Options.RedisStats; zero without): the store's work counted
	// wherever it runs. Not a goal; context for EmbeddedVsRedisCPU.
	EmbeddedVsRedisWithServer float64 `json:"embedded_vs_redis_with_server_cpu,omitempty"`
	// CPUVsFloor divides each store's cycle 1 worker CPU by the floor's
	// CPU, by store name.
	CPUVsFloor map[string]float64 `json:"cpu_vs_floor"`
}

// summarize fills the medians and the ratios from the runs.
func (r *Report) summarize() {
	for i := range r.Stores {
		r.Stores[i].Median = medians(r.Stores[i].Runs)
	}
	fl := r.Floor.Runs
	col := func(get func(Floor) float64) float64 {
		v := make([]float64, len(fl))
		for i, f := range fl {
			v[i] = get(f)
		}
		return median(v)
	}
	r.Floor.Median = Floor{Wall: col(func(f Floor) float64 { return f.Wall }), CPU: col(func(f Floor) float64 { return f.CPU }),
		PeakRSSMB: col(func(f Floor) float64 { return f.PeakRSSMB }), Items: int(col(func(f Floor) float64 { return float64(f.Items) }))}
	r.Ratios.CPUVsFloor = map[string]float64{}
	var emb, red *StoreResult
	for i := range r.Stores {
		s := &r.Stores[i]
		switch s.Store {
		case StoreEmbedded:
			emb = s
		case StoreRedis:
			red = s
		}
		v := make([]float64, 0, len(s.Runs))
		for run, cycles := range s.Runs {
			if run < len(fl) && fl[run].CPU > 0 && len(cycles) > 0 {
				v = append(v, cycles[0].CPU/fl[run].CPU)
			}
		}
		r.Ratios.CPUVsFloor[s.Store] = median(v)
	}
	if emb != nil && red != nil {
		var wall, cpu, withServer []float64
		for run := range min(len(emb.Runs), len(red.Runs)) {
			e, d := emb.Runs[run][0], red.Runs[run][0]
			if d.Wall > 0 && d.CPU > 0 {
				wall, cpu = append(wall, e.Wall/d.Wall), append(cpu, e.CPU/d.CPU)
			}
			if d.Redis != nil && d.CPU+d.Redis.ServerCPU > 0 {
				withServer = append(withServer, e.CPU/(d.CPU+d.Redis.ServerCPU))
			}
		}
		r.Ratios.EmbeddedVsRedisWall, r.Ratios.EmbeddedVsRedisCPU = median(wall), median(cpu)
		r.Ratios.EmbeddedVsRedisWithServer = median(withServer) // 0 without Redis stats
	}
	r.Targets = r.targets()
}

// ReportOptions echo the options that shape the numbers.
type ReportOptions struct {
	Feeds      int     `json:"feeds"`
	Items      int     `json:"items"`
	Change     float64 `json:"change"`
	Latency    string  `json:"latency"`
	APILatency string  `json:"api_latency"`
	Gzip       bool    `json:"gzip"`
	RateLimit  float64 `json:"rate_limit"`
	ErrorRate  float64 `json:"error_rate"`
	Outage     string  `json:"outage,omitempty"`
	// WorkerRateLimit is the worker's api.rate_limit (0: unset).
	WorkerRateLimit float64 `json:"worker_rate_limit"`
	Runs            int     `json:"runs"`
	Seed            uint64  `json:"seed"`
	Workers         int     `json:"publish_workers"`
	Concurrency     int     `json:"http_concurrency"`
}

func reportOptions(o Options) ReportOptions {
	return ReportOptions{
		Feeds: o.Feeds, Items: o.Items, Change: o.Change, Latency: o.Latency.String(),
		APILatency: o.APILatency.String(), Gzip: o.Gzip, RateLimit: o.RateLimit, ErrorRate: o.ErrorRate, Outage: outageString(o.Outage),
		WorkerRateLimit: o.workerRateLimit(), Runs: o.Runs,
		Seed: o.Seed, Workers: o.Workers, Concurrency: o.Concurrency,
	}
}

// Machine describes where the bench ran.
type Machine struct {
	CPUs         int    `json:"cpus"`
	MemoryGiB    string `json:"memory_gib"`
	GoVersion    string `json:"go_version"`
	RedisVersion string `json:"redis_version"`
	OS           string `json:"os"`
	// LoadAvg is /proc/loadavg when the bench started: on a shared
	// machine, how busy it was.
	LoadAvg string `json:"load_avg"`
}

func machine(ctx context.Context, rc *redis.Client) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		MemoryGiB: "unknown", RedisVersion: "unknown", LoadAvg: "unknown"}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					m.MemoryGiB = fmt.Sprintf("%.1f", kb/(1<<20))
				}
			}
		}
		f.Close()
	}
	if rc == nil {
		m.RedisVersion = "not used"
		return m
	}
	if info, err := rc.Info(ctx, "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				m.RedisVersion = v
			}
		}
	}
	return m
}

// medians takes, per cycle, the median of every measure over the runs.
// Each measure's median is taken on its own, so a median row need not be
// one of the runs.
func medians(runs [][]Cycle) []Cycle {
	if len(runs) == 0 {
		return nil
	}
	out := make([]Cycle, len(runs[0]))
	for i := range out {
		col := make([]Cycle, 0, len(runs))
		for _, r := range runs {
			col = append(col, r[i])
		}
		f := func(get func(Cycle) float64) float64 {
			v := make([]float64, len(col))
			for j, c := range col {
				v[j] = get(c)
			}
			return median(v)
		}
		n := func(get func(Cycle) int64) int64 {
			return int64(f(func(c Cycle) float64 { return float64(get(c)) }) + 0.5)
		}
		out[i] = Cycle{
			Cycle: col[0].Cycle,
			Wall:  f(func(c Cycle) float64 { return c.Wall }),
			Phases: Phases{
				Start:   f(func(c Cycle) float64 { return c.Phases.Start }),
				Setup:   f(func(c Cycle) float64 { return c.Phases.Setup }),
				Pass:    f(func(c Cycle) float64 { return c.Phases.Pass }),
				PassCPU: f(func(c Cycle) float64 { return c.Phases.PassCPU }),
				Exit:    f(func(c Cycle) float64 { return c.Phases.Exit }),
			},
			CPU:               f(func(c Cycle) float64 { return c.CPU }),
			PeakRSSMB:         f(func(c Cycle) float64 { return c.PeakRSSMB }),
			ItemsPerSec:       f(func(c Cycle) float64 { return c.ItemsPerSec }),
			FeedsPerSec:       f(func(c Cycle) float64 { return c.FeedsPerSec }),
			FeedRequests:      n(func(c Cycle) int64 { return c.FeedRequests }),
			FeedNotModified:   n(func(c Cycle) int64 { return c.FeedNotModified }),
			APIRequests:       n(func(c Cycle) int64 { return c.APIRequests }),
			FeedConns:         n(func(c Cycle) int64 { return c.FeedConns }),
			APIConns:          n(func(c Cycle) int64 { return c.APIConns }),
			APIRateLimited:    n(func(c Cycle) int64 { return c.APIRateLimited }),
			Created:           int(n(func(c Cycle) int64 { return int64(c.Created) })),
			Updated:           int(n(func(c Cycle) int64 { return int64(c.Updated) })),
			Polls:             int(n(func(c Cycle) int64 { return int64(c.Polls) })),
			RedisRoundTrips:   n(func(c Cycle) int64 { return c.RedisRoundTrips }),
			RoundTripsPerPoll: f(func(c Cycle) float64 { return c.RoundTripsPerPoll }),
			RoundTripsPerItem: f(func(c Cycle) float64 { return c.RoundTripsPerItem }),
			HistoryDropped:    n(func(c Cycle) int64 { return c.HistoryDropped }),
			DeliveredRate:     f(func(c Cycle) float64 { return c.DeliveredRate }),
			RateLimitRatio:    f(func(c Cycle) float64 { return c.RateLimitRatio }),
			CPUPerItemUS:      f(func(c Cycle) float64 { return c.CPUPerItemUS }),
			AfterRecovery:     f(func(c Cycle) float64 { return c.AfterRecovery }),
			Redis:             medianRedis(col),
		}
	}
	return out
}

// medianRedis is the first run's Redis stats (the commands and keys of a
// cycle hardly change from run to run) with the times, which do, as
// medians over the runs: the server's CPU and the commands' usec.
func medianRedis(col []Cycle) *RedisStats {
	if col[0].Redis == nil {
		return nil
	}
	r := *col[0].Redis
	var cpu, usec []float64
	for _, c := range col {
		if c.Redis != nil {
			cpu, usec = append(cpu, c.Redis.ServerCPU), append(usec, float64(c.Redis.Usec))
		}
	}
	r.ServerCPU, r.Usec = median(cpu), int64(median(usec)+0.5)
	return &r
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var cycleNames = map[int]string{1: "1 all new", 2: "2 all 304", 3: "3 changed"}

// WriteText writes the report for people: the setup, then one row per
// cycle of medians.
func (r *Report) WriteText(w io.Writer) error {
	o, m := r.Options, r.Machine
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "feedworker bench: %d feeds × %d items, change %.0f%%, feed latency %s, API latency %s, gzip %v",
		o.Feeds, o.Items, o.Change*100, o.Latency, o.APILatency, o.Gzip)
	if o.RateLimit > 0 {
		fmt.Fprintf(bw, ", API rate limit %g/s (worker's api.rate_limit %g)", o.RateLimit, o.WorkerRateLimit)
	}
	if o.ErrorRate > 0 {
		fmt.Fprintf(bw, ", API error rate %g", o.ErrorRate)
	}
	fmt.Fprintf(bw, "\nworker: publish.workers %d, http concurrency %d; medians of %d run(s), seed %d\n",
		o.Workers, o.Concurrency, o.Runs, o.Seed)
	fmt.Fprintf(bw, "machine: %d CPUs, %s GiB, %s, %s, Redis %s, load average at start %s\n", m.CPUs, m.MemoryGiB, m.OS, m.GoVersion, m.RedisVersion, m.LoadAvg)
	fl := r.Floor.Median
	fmt.Fprintf(bw, "gofeed floor (fetch + gofeed parse only, same farm, same concurrency): wall %.3f s, CPU %.3f s, peak RSS %.1f MiB, %d items\n",
		fl.Wall, fl.CPU, fl.PeakRSSMB, fl.Items)
	for _, st := range r.Stores {
		fmt.Fprintf(bw, "\nstore: %s\n", st.Store)
		if err := writeCycles(bw, o, st.Median); err != nil {
			return err
		}
	}
	fmt.Fprintln(bw, "\nratios (cycle 1; median over runs of the ratio within each run):")
	if r.Ratios.EmbeddedVsRedisWall > 0 {
		fmt.Fprintf(bw, "  embedded / redis: wall %.2f×, worker CPU %.2f×\n", r.Ratios.EmbeddedVsRedisWall, r.Ratios.EmbeddedVsRedisCPU)
	}
	if r.Ratios.EmbeddedVsRedisWithServer > 0 {
		fmt.Fprintf(bw, "  embedded worker CPU / (redis worker CPU + Redis server CPU): %.2f×\n", r.Ratios.EmbeddedVsRedisWithServer)
	}
	for _, st := range r.Stores {
		fmt.Fprintf(bw, "  %s worker CPU / gofeed floor CPU: %.2f×\n", st.Store, r.Ratios.CPUVsFloor[st.Store])
	}
	writeTargets(bw, r.Targets)
	if len(r.Floor.Runs) > 1 {
		fmt.Fprintln(bw, "\nper run (wall s (the pass alone) / worker CPU s / peak RSS MiB):")
		for i, f := range r.Floor.Runs {
			fmt.Fprintf(bw, "  run %d: floor %.3f / %.3f / %.1f\n", i+1, f.Wall, f.CPU, f.PeakRSSMB)
			for _, st := range r.Stores {
				if i >= len(st.Runs) {
					continue
				}
				fmt.Fprintf(bw, "         %-8s", st.Store)
				for _, c := range st.Runs[i] {
					fmt.Fprintf(bw, "  cycle %d %.3f (pass %.3f) / %.3f / %.1f", c.Cycle, c.Wall, c.Phases.Pass, c.CPU, c.PeakRSSMB)
				}
				fmt.Fprintln(bw)
			}
		}
	}
	return bw.Flush()
}

func writeCycles(w io.Writer, o ReportOptions, cycles []Cycle) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cycle\twall s\tpass s\tworker CPU s\tCPU µs/item\titems/s\tfeeds/s\tpeak RSS MiB\tfeed req (304)\tAPI req (429)\tconns feed/API\tcreated\tupdated\tRedis RT\tRT/poll\tRT/item\tdelivered/s\tvs limit\t")
	for _, c := range cycles {
		ratio := "-"
		if o.RateLimit > 0 {
			ratio = fmt.Sprintf("%.3f", c.RateLimitRatio)
		}
		perItem, cpuItem := "-", "-"
		if c.Created+c.Updated > 0 {
			perItem = fmt.Sprintf("%.2f", c.RoundTripsPerItem)
			cpuItem = fmt.Sprintf("%.0f", c.CPUPerItemUS)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%s\t%.0f\t%.0f\t%.1f\t%d (%d)\t%d (%d)\t%d/%d\t%d\t%d\t%d\t%.3f\t%s\t%.0f\t%s\t\n",
			cycleNames[c.Cycle], c.Wall, c.Phases.Pass, c.CPU, cpuItem, c.ItemsPerSec, c.FeedsPerSec, c.PeakRSSMB,
			c.FeedRequests, c.FeedNotModified, c.APIRequests, c.APIRateLimited, c.FeedConns, c.APIConns, c.Created, c.Updated,
			c.RedisRoundTrips, c.RoundTripsPerPoll, perItem, c.DeliveredRate, ratio)
	}
	fmt.Fprintln(tw, "\nwall by the worker's clock: the process starting, its setup (config, store open), the pass (worker.Once), its exit (report, store closed)")
	fmt.Fprintln(tw, "cycle\tstart s\tsetup s\tpass s\texit s\tpass CPU s\t")
	for _, c := range cycles {
		p := c.Phases
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", cycleNames[c.Cycle], p.Start, p.Setup, p.Pass, p.Exit, p.PassCPU)
	}
	writeRedisStats(tw, cycles)
	if o.Outage != "" && len(cycles) > 0 {
		fmt.Fprintf(tw, "\ncycle 1: every API request failed for the first %s; the last item was confirmed %.3f s after the recovery\n",
			o.Outage, cycles[0].AfterRecovery)
	}
	return tw.Flush()
}

// WriteJSON writes the report for machines.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// outageString is the outage for the report, "" without one.
func outageString(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}
