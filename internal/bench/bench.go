// Package bench measures the worker end to end, as `feedworker bench` runs
// it: a feed farm and the sandbox served from the bench process, a Redis
// (the one at REDIS_URL) under a fresh key prefix, and the worker as a child
// process per cycle, so that its CPU time and peak RSS come from the
// kernel's accounting of that process alone (getrusage of the child).
//
// A run measures each store asked for (the embedded bbolt file and Redis,
// by default both, one after the other on fresh farms and sandboxes) and
// the gofeed-only floor (see [Floor]), so that their ratios come from the
// same run. Each store has three cycles: 1, every item new; 2, every feed
// answers 304; 3, a fraction of the feeds changed (one new item and one
// edited item each). Each cycle starts a fresh worker process (`feedworker bench
// worker`, which is `feedworker once` plus a report of its metrics written
// at exit) and ends when it exits, after delivering everything due; the
// bench then checks the sandbox holds what it should and fails otherwise.
//
// Redis round trips are counted by the worker itself, with a go-redis hook
// (each command sent alone and each pipeline count one), and exported as
// feedworker_redis_round_trips_total. Counting inside the worker keeps the
// number honest on a Redis shared with other users, where INFO deltas would
// include their commands.
package bench

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/internal/feedfarm"
	"github.com/feedworker/feedworker/sandbox"
)

// Defaults of [Options].
const (
	DefaultFeeds       = 1000
	DefaultItems       = 20
	DefaultChange      = 0.1
	DefaultRuns        = 1
	DefaultWorkers     = 16
	DefaultConcurrency = 32
	DefaultSeed        = 1
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
	// StoreEmbedded and StoreRedis name the stores a bench measures.
	StoreEmbedded = "embedded"
	StoreRedis    = "redis"
	// DefaultTimeout bounds one cycle; a worker that hangs fails the run.
	DefaultTimeout = 10 * time.Minute
)

// Options describe a bench. Zero fields take the defaults.
type Options struct {
	Feeds int // feeds in the farm
	Items int // items per feed
	// NoReposts turns repost matching and the flood guard off (reposts:
	// match: [], across_feeds: false, flood_max: 0), to measure their cost.
	NoReposts bool
	// Change is the fraction of feeds changed before cycle 3.
	Change float64
	// Latency is added to every feed answer; APILatency to every API
	// request.
	Latency    time.Duration
	APILatency time.Duration
	Gzip       bool // serve feeds gzipped
	// SandboxStyle is how the sandbox answers (empty: strict); loose
	// measures the cost of reading an untidier service.
	SandboxStyle sandbox.Style
	// RateLimit, when positive, is the API's rate limit in requests per
	// second: the sandbox answers 429 above it, and the worker is configured
	// with it (api.rate_limit), as an operator would from the API's docs.
	RateLimit float64
	// ErrorRate is the fraction (0 to 1) of API requests the sandbox
	// answers 500 or 503 (no Retry-After) without applying them.
	ErrorRate float64
	// Outage, when positive, makes every API request of cycle 1 fail
	// (500/503) for that long from the cycle's start; the report says how
	// long after the recovery the last item was confirmed.
	Outage time.Duration
	// WorkerRateLimit is the worker's api.rate_limit: negative (the
	// default from the command line) means RateLimit, zero leaves it unset
	// so that only the API's 429 answers and Retry-After slow the worker.
	WorkerRateLimit float64
	// Runs is how many times the three cycles run; the report gives the
	// median of each measure.
	Runs int
	// Stores are the stores measured, in order: StoreEmbedded and
	// StoreRedis (default both). Redis is reached only when asked for.
	Stores   []string
	RedisURL string
	// RedisStats adds Redis's own view of each Redis cycle (see
	// [RedisStats]): INFO commandstats and used_memory deltas and MEMORY
	// USAGE of the run's keys by kind. It needs a Redis of the bench's own.
	RedisStats bool
	Seed       uint64
	// Workers is publish.workers and Concurrency is http.max_concurrency
	// and http.per_host_concurrency (the farm is one host) in the worker's
	// config.
	Workers     int
	Concurrency int
	// Command runs the worker: the program and its first arguments, to
	// which "--config FILE --report FILE" is appended; the program must
	// call RunWorker with them. Required; the command line passes its own
	// executable and "bench", "worker". Env is added to its environment.
	Command []string
	Env     []string
	// ProfileDir, when set, receives a CPU and a heap profile of the worker
	// per cycle (cycleN-cpu.pprof, cycleN-heap.pprof).
	ProfileDir string
	// Dir holds the configs and reports (default a temporary directory,
	// removed after).
	Dir string
	// Timeout bounds each cycle (default DefaultTimeout).
	Timeout time.Duration
	// Logger reports progress (nil discards).
	Logger *slog.Logger
	// WorkerLog receives the worker's stderr (nil: kept in Dir and shown
	// when it fails).
	WorkerLog string
}

func (o Options) withDefaults() Options {
	o.Feeds = cmp.Or(o.Feeds, DefaultFeeds)
	o.Items = cmp.Or(o.Items, DefaultItems)
	o.Runs = cmp.Or(o.Runs, DefaultRuns)
	if len(o.Stores) == 0 {
		o.Stores = []string{StoreEmbedded, StoreRedis}
	}
	o.RedisURL = cmp.Or(o.RedisURL, DefaultRedisURL)
	o.Seed = cmp.Or(o.Seed, DefaultSeed)
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.Concurrency = cmp.Or(o.Concurrency, DefaultConcurrency)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) workerRateLimit() float64 {
	if o.WorkerRateLimit < 0 {
		return o.RateLimit
	}
	return o.WorkerRateLimit
}

func (o Options) validate() error {
	var errs []error
	if o.Feeds < 1 || o.Items < 1 {
		errs = append(errs, fmt.Errorf("feeds %d, items %d: want at least 1 of each", o.Feeds, o.Items))
	}
	if o.Change < 0 || o.Change > 1 {
		errs = append(errs, fmt.Errorf("change %v: want a fraction from 0 to 1", o.Change))
	}
	if !(o.ErrorRate >= 0 && o.ErrorRate < 1) {
		errs = append(errs, fmt.Errorf("error rate %v: want a fraction from 0 to below 1", o.ErrorRate))
	}
	if o.Runs < 1 {
		errs = append(errs, fmt.Errorf("runs %d: want at least 1", o.Runs))
	}
	if o.Latency < 0 || o.APILatency < 0 || o.RateLimit < 0 {
		errs = append(errs, errors.New("latencies and the rate limit must not be negative"))
	}
	for _, st := range o.Stores {
		if st != StoreEmbedded && st != StoreRedis {
			errs = append(errs, fmt.Errorf("store %q: want %q or %q", st, StoreEmbedded, StoreRedis))
		}
	}
	if len(o.Command) == 0 {
		errs = append(errs, errors.New("no worker command"))
	}
	return errors.Join(errs...)
}

// Run runs the bench and returns its report. Any failure (a worker that
// exits non-zero, an item missing or doubled on the API, Redis unreachable)
// is an error: a number measured on a broken run means nothing.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "feedworker-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	} else if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: profile dir: %w", err)
		}
	}
	var rc *redis.Client
	if slices.Contains(o.Stores, StoreRedis) {
		ropts, err := redis.ParseURL(o.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("bench: redis url: %w", err)
		}
		ropts.MaxRetries = -1 // a Redis that does not answer fails the bench at once
		rc = redis.NewClient(ropts)
		defer rc.Close()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = rc.Ping(pctx).Err()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("bench: redis at %s: %w", redactURL(o.RedisURL), err)
		}
	}
	rep := &Report{Options: reportOptions(o), Machine: machine(ctx, rc)}
	for _, st := range o.Stores {
		rep.Stores = append(rep.Stores, StoreResult{Store: st})
	}
	for run := range o.Runs {
		o.Logger.Info("run", "n", run+1, "of", o.Runs)
		f, err := runFloor(ctx, o, run)
		if err != nil {
			return nil, fmt.Errorf("bench: run %d: %w", run+1, err)
		}
		rep.Floor.Runs = append(rep.Floor.Runs, f)
		// The stores take turns going first, so that neither always runs
		// on a machine the other just warmed (or heated).
		order := make([]int, len(o.Stores))
		for i := range order {
			order[i] = (i + run) % len(order)
		}
		for _, i := range order {
			cycles, err := runOnce(ctx, o, rc, run, o.Stores[i])
			if err != nil {
				return nil, fmt.Errorf("bench: run %d, %s store: %w", run+1, o.Stores[i], err)
			}
			rep.Stores[i].Runs = append(rep.Stores[i].Runs, cycles)
		}
	}
	rep.summarize()
	return rep, nil
}

// env is one run's servers and state.
type env struct {
	o       Options
	store   string // StoreEmbedded or StoreRedis
	prefix  string
	farm    *feedfarm.Farm
	farmURL string
	sb      *sandbox.Server
	api     *apiCounter
	sbURL   string
	run     int
	// rc and redisBase are the Redis and its counters before cycle 1,
	// for Options.RedisStats.
	rc        *redis.Client
	redisBase redisCounters
	// Connections the worker opened to the farm and to the API.
	farmConns, apiConns atomic.Int64
}

// runFloor measures the gofeed-only floor on a fresh farm.
func runFloor(ctx context.Context, o Options, run int) (Floor, error) {
	e := &env{o: o, run: run}
	e.farm = feedfarm.New(feedfarm.Options{Feeds: o.Feeds, Items: o.Items, Seed: o.Seed, Latency: o.Latency, Gzip: o.Gzip})
	farmURL, stopFarm, err := serve(e.farm, &e.farmConns)
	if err != nil {
		return Floor{}, err
	}
	defer stopFarm()
	e.farmURL = farmURL
	return e.floor(ctx)
}

func runOnce(ctx context.Context, o Options, rc *redis.Client, run int, store string) (cycles []Cycle, err error) {
	e := &env{o: o, run: run, store: store, rc: rc}
	if store == StoreRedis && o.RedisStats {
		if e.redisBase, err = readCounters(ctx, rc); err != nil {
			return nil, err
		}
	}
	if store == StoreRedis {
		e.prefix = "fw-bench-" + randomHex(6) + ":"
		defer func() {
			// A fresh prefix per run; its keys go whatever happened.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if cerr := deletePrefix(cctx, rc, e.prefix); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean redis prefix %s: %w", e.prefix, cerr))
			}
		}()
	}

	e.farm = feedfarm.New(feedfarm.Options{Feeds: o.Feeds, Items: o.Items, Seed: o.Seed, Latency: o.Latency, Gzip: o.Gzip})
	farmURL, stopFarm, err := serve(e.farm, &e.farmConns)
	if err != nil {
		return nil, err
	}
	defer stopFarm()
	e.farmURL = farmURL

	e.sb, err = sandbox.New(sandbox.Options{
		Faults:         sandbox.Faults{Latency: o.APILatency, RateLimit: o.RateLimit, ErrorRate: o.ErrorRate, Seed: o.Seed},
		Style:          o.SandboxStyle,
		RequestLogSize: 1, // the bench counts requests itself
	})
	if err != nil {
		return nil, err
	}
	e.api = newAPICounter(e.sb)
	sbURL, stopSB, err := serve(e.api, &e.apiConns)
	if err != nil {
		return nil, err
	}
	defer stopSB()
	e.sbURL = sbURL

	cfg, err := e.writeConfig()
	if err != nil {
		return nil, err
	}
	total := o.Feeds * o.Items

	// Cycle 1: every item is new.
	c, err := e.cycle(ctx, 1, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.expect(c, total, 0, total); err != nil {
		return nil, fmt.Errorf("cycle 1: %w", err)
	}
	cycles = append(cycles, c)

	// Cycle 2: nothing changed; every feed answers 304.
	if c, err = e.cycle(ctx, 2, cfg); err != nil {
		return nil, err
	}
	if err := e.expect(c, 0, 0, total); err != nil {
		return nil, fmt.Errorf("cycle 2: %w", err)
	}
	if c.FeedNotModified != int64(o.Feeds) {
		return nil, fmt.Errorf("cycle 2: %d of %d feeds answered 304", c.FeedNotModified, o.Feeds)
	}
	cycles = append(cycles, c)

	// Cycle 3: a fraction of the feeds changed.
	added, edited := e.farm.Change(o.Change, uint64(run)+1)
	if c, err = e.cycle(ctx, 3, cfg); err != nil {
		return nil, err
	}
	if err := e.expect(c, added, edited, total+added); err != nil {
		return nil, fmt.Errorf("cycle 3: %w", err)
	}
	cycles = append(cycles, c)
	return cycles, nil
}

// expect checks what a cycle delivered: created and updated items as the
// API answered them, and the content the sandbox holds, each external id
// exactly once.
func (e *env) expect(c Cycle, created, updated, held int) error {
	var errs []error
	if c.Created != created || c.Updated != updated {
		errs = append(errs, fmt.Errorf("the API confirmed %d creates and %d updates, want %d and %d",
			c.Created, c.Updated, created, updated))
	}
	counts := e.sb.Counts()
	if n := counts["story"]; n != held {
		errs = append(errs, fmt.Errorf("the sandbox holds %d stories, want %d", n, held))
	}
	if len(errs) == 0 && created > 0 {
		seen := make(map[string]bool, held)
		for _, it := range e.sb.AllContent() {
			if it.ExternalID == "" || seen[it.ExternalID] {
				errs = append(errs, fmt.Errorf("external id %q on the API twice or empty", it.ExternalID))
				break
			}
			seen[it.ExternalID] = true
		}
	}
	return errors.Join(errs...)
}

// writeConfig writes the worker's config for this run's servers.
func (e *env) writeConfig() (string, error) {
	o := e.o
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by feedworker bench.
api:
  base_url: %s
  token_url: %s/oauth/token
  client_id: %s
  client_secret: %s
`, e.sbURL, e.sbURL, sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	if wl := o.workerRateLimit(); wl > 0 {
		fmt.Fprintf(&b, "  rate_limit: %g\n", wl)
	}
	if e.store == StoreRedis {
		fmt.Fprintf(&b, "redis:\n  url: %q\n  prefix: %q\n", o.RedisURL, e.prefix)
	} else {
		db := filepath.Join(o.Dir, fmt.Sprintf("run%d.db", e.run+1))
		if err := os.Remove(db); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("remove old store file: %w", err)
		}
		fmt.Fprintf(&b, "store:\n  path: %q\n", db)
	}
	fmt.Fprintf(&b, `http:
  max_concurrency: %d
  per_host_concurrency: %d
publish:
  workers: %d
admin:
  listen: ""
log:
  level: warn
defaults:
  initial_items: %d
feeds:
`, o.Concurrency, o.Concurrency, o.Workers, o.Items)
	if o.NoReposts {
		// Inserted before feeds: it belongs to defaults.
		s := b.String()
		b.Reset()
		b.WriteString(strings.TrimSuffix(s, "feeds:\n") + "  reposts:\n    match: []\n    across_feeds: false\n    flood_max: 0\nfeeds:\n")
	}
	for i := range o.Feeds {
		fmt.Fprintf(&b, "  - id: farm-%d\n    url: %s\n", i, feedfarm.URL(e.farmURL, i))
	}
	path := filepath.Join(o.Dir, fmt.Sprintf("run%d-%s.yaml", e.run+1, e.store))
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("write worker config: %w", err)
	}
	return path, nil
}

// cycle runs the worker once and measures it.
func (e *env) cycle(ctx context.Context, n int, cfg string) (Cycle, error) {
	o := e.o
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	name := fmt.Sprintf("run%d-%s-cycle%d", e.run+1, e.store, n)
	report := filepath.Join(o.Dir, name+".json")
	args := append(append([]string{}, o.Command[1:]...), "--config", cfg, "--report", report)
	if o.ProfileDir != "" {
		args = append(args,
			"--cpuprofile", filepath.Join(o.ProfileDir, name+"-cpu.pprof"),
			"--memprofile", filepath.Join(o.ProfileDir, name+"-heap.pprof"))
	}
	farmReq, farm304 := e.farm.Requests(), e.farm.NotModified()
	farmConns, apiConns := e.farmConns.Load(), e.apiConns.Load()
	api0 := e.api.snapshot()
	var redis0 redisCounters
	if e.store == StoreRedis && o.RedisStats {
		var err error
		if redis0, err = readCounters(ctx, e.rc); err != nil {
			return Cycle{}, err
		}
	}
	o.Logger.Info("cycle", "run", e.run+1, "store", e.store, "cycle", n)
	stopProfile, err := e.profileServers(name)
	if err != nil {
		return Cycle{}, err
	}
	var recovered time.Time
	stopOutage := func() {}
	if n == 1 && o.Outage > 0 {
		base := e.sb.Faults()
		down := base
		down.ErrorRate = 1
		if err := e.sb.SetFaults(down); err != nil {
			return Cycle{}, err
		}
		var once sync.Once
		heal := func() {
			once.Do(func() {
				recovered = time.Now()
				_ = e.sb.SetFaults(base)
			})
		}
		t := time.AfterFunc(o.Outage, heal)
		stopOutage = func() { t.Stop(); heal() }
	}
	ru, start, wall, logPath, err := e.child(ctx, fmt.Sprintf("%s-cycle%d", e.store, n), args)
	stopOutage()
	stopProfile()
	if err != nil {
		return Cycle{}, fmt.Errorf("cycle %d: %w", n, err)
	}
	api := e.api.since(api0)

	wr, err := readWorkerReport(report)
	if err != nil {
		return Cycle{}, fmt.Errorf("cycle %d: %w", n, err)
	}
	if e.store == StoreRedis && !wr.CountsRoundTrips {
		// The bench counts round trips on Redis; a worker without the
		// counter is not the one the bench was built with.
		return Cycle{}, fmt.Errorf("cycle %d: no feedworker_redis_round_trips_total in the worker's metrics", n)
	}
	c := Cycle{
		Cycle:           n,
		Wall:            wall.Seconds(),
		Phases:          phasesOf(start, wall, wr.Timing),
		CPU:             tvSeconds(ru.Utime) + tvSeconds(ru.Stime),
		PeakRSSMB:       float64(wr.PeakRSSKB) / 1024, // see WorkerReport.PeakRSSKB
		FeedRequests:    e.farm.Requests() - farmReq,
		FeedNotModified: e.farm.NotModified() - farm304,
		APIRequests:     api.requests,
		FeedConns:       e.farmConns.Load() - farmConns,
		APIConns:        e.apiConns.Load() - apiConns,
		Created:         int(api.created),
		Updated:         int(api.updated),
		Polls:           wr.Polls,
		RedisRoundTrips: wr.RedisRoundTrips,
		HistoryDropped:  wr.HistoryDropped,
	}
	if e.store == StoreRedis && o.RedisStats {
		if c.Redis, err = redisStats(ctx, e.rc, e.prefix, e.redisBase, redis0); err != nil {
			return Cycle{}, fmt.Errorf("cycle %d: %w", n, err)
		}
	}
	c.derive(o, api)
	if !recovered.IsZero() && api.last.After(recovered) {
		c.AfterRecovery = api.last.Sub(recovered).Seconds()
	}
	if wr.Failed > 0 {
		return Cycle{}, fmt.Errorf("cycle %d: %d polls failed (log: %s)", n, wr.Failed, tail(logPath))
	}
	if wr.Polls != o.Feeds {
		return Cycle{}, fmt.Errorf("cycle %d: the worker polled %d feeds, want %d", n, wr.Polls, o.Feeds)
	}
	return c, nil
}

// profileServers profiles the bench process (the farm and the sandbox)
// during a cycle, when profiles are asked for, to see whether the servers
// rather than the worker set the pace.
func (e *env) profileServers(name string) (stop func(), err error) {
	if e.o.ProfileDir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(e.o.ProfileDir, name+"-servers-cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("servers profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("servers profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// child runs one child process (a worker cycle or the floor) with args,
// its output in a log file, and returns its resource usage, when it was
// started and its wall time.
func (e *env) child(ctx context.Context, name string, args []string) (*syscall.Rusage, time.Time, time.Duration, string, error) {
	o := e.o
	logPath := cmp.Or(o.WorkerLog, filepath.Join(o.Dir, fmt.Sprintf("run%d-%s.log", e.run+1, name)))
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, time.Time{}, 0, "", fmt.Errorf("%s: log: %w", name, err)
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, o.Command[0], args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(o.Env) > 0 {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return nil, start, 0, logPath, fmt.Errorf("%s: %w (log: %s)", name, err, tail(logPath))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, start, 0, logPath, fmt.Errorf("%s: no resource usage for the process", name)
	}
	return ru, start, wall, logPath, nil
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// tail returns the end of a log file for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return path
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return path + ":\n" + string(b)
}

// serve serves h on a loopback port until stop is called.
// conns counts the connections accepted, to show whether the worker
// reuses them.
func serve(h http.Handler, conns *atomic.Int64) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns ErrServerClosed after Close
	}()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close(); <-done }, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// deletePrefix deletes every key under prefix.
func deletePrefix(ctx context.Context, rc *redis.Client, prefix string) error {
	iter := rc.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			if err := rc.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(keys) > 0 {
		return rc.Unlink(ctx, keys...).Err()
	}
	return nil
}

func redactURL(raw string) string {
	if i := strings.Index(raw, "@"); i > 0 {
		if j := strings.Index(raw, "://"); j > 0 && j < i {
			return raw[:j+3] + "***" + raw[i:]
		}
	}
	return raw
}
