package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/feedworker/feedworker/internal/bench"
)

// cmdBench measures the worker end to end (see package internal/bench);
// "bench worker" is the worker process it starts per cycle.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "worker" {
		return cmdBenchWorker(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("bench", stderr)
	var o bench.Options
	fs.IntVar(&o.Feeds, "feeds", bench.DefaultFeeds, "feeds in the farm")
	fs.IntVar(&o.Items, "items", bench.DefaultItems, "items per feed (about 1.5 KB of HTML each)")
	fs.Float64Var(&o.Change, "change", bench.DefaultChange, "fraction of feeds changed before cycle 3 (one new and one edited item each)")
	fs.DurationVar(&o.Latency, "latency", 0, "latency added to every feed answer")
	fs.DurationVar(&o.APILatency, "api-latency", 0, "latency added to every API request")
	fs.BoolVar(&o.Gzip, "gzip", false, "serve feeds gzipped")
	fs.BoolVar(&o.NoReposts, "no-reposts", false, "turn repost matching and the flood guard off (to measure their cost)")
	fs.Var(&o.SandboxStyle, "sandbox-style", "how the sandbox answers: strict or loose (string ids, RFC 3339 times, nulls, extra fields)")
	fs.Float64Var(&o.RateLimit, "rate-limit", 0, "the API's rate limit in requests/s (the sandbox answers 429 above it; the worker is configured with it); 0: none")
	fs.Float64Var(&o.WorkerRateLimit, "worker-rate-limit", -1, "the worker's api.rate_limit; negative: --rate-limit, 0: unset (only 429 and Retry-After slow it)")
	fs.Float64Var(&o.ErrorRate, "error-rate", 0, "fraction (0-1) of API requests the sandbox answers 500 or 503 without Retry-After, unapplied")
	fs.DurationVar(&o.Outage, "outage", 0, "every API request of cycle 1 fails (500/503) for this long from its start; the report gives the time from the recovery to the last confirmed item")
	fs.IntVar(&o.Runs, "runs", bench.DefaultRuns, "runs of the three cycles; the report gives medians")
	fs.StringVar(&o.RedisURL, "redis-url", cmp.Or(os.Getenv("REDIS_URL"), bench.DefaultRedisURL), "Redis to use (with --stores redis), under a fresh key prefix removed after; $REDIS_URL, when set, is the default")
	fs.Uint64Var(&o.Seed, "seed", bench.DefaultSeed, "seed of the generated feeds and of the changed feeds")
	fs.IntVar(&o.Workers, "workers", bench.DefaultWorkers, "publish.workers of the worker")
	fs.IntVar(&o.Concurrency, "concurrency", bench.DefaultConcurrency, "http.max_concurrency and http.per_host_concurrency of the worker")
	fs.StringVar(&o.ProfileDir, "profile", "", "directory for CPU and heap profiles of the worker, and a CPU profile of the farm and sandbox, per cycle")
	fs.DurationVar(&o.Timeout, "timeout", bench.DefaultTimeout, "longest a cycle may take")
	fs.StringVar(&o.Dir, "dir", "", "keep the worker configs, logs and reports in this directory (default: a temporary one, removed)")
	fs.BoolVar(&o.RedisStats, "redis-stats", false, "with the redis store: add Redis's own view per cycle (INFO commandstats, used_memory and server CPU deltas, MEMORY USAGE of the keys by kind); needs a Redis of the bench's own")
	stores := fs.String("stores", bench.StoreEmbedded+","+bench.StoreRedis, "stores to measure, comma-separated: embedded (bbolt file), redis")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	verbose := fs.Bool("v", false, "log progress to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	// Zero means "the default" to the package; on the command line it is
	// a mistake.
	if o.Feeds < 1 || o.Items < 1 || o.Runs < 1 || o.Workers < 1 || o.Concurrency < 1 {
		return errors.New("--feeds, --items, --runs, --workers and --concurrency must be at least 1")
	}
	o.Stores = strings.Split(*stores, ",")
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the feedworker executable: %w", err)
	}
	o.Command = []string{exe, "bench", "worker"}
	if *verbose {
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}

// cmdBenchWorker is the worker process of a bench cycle: `feedworker
// once` plus a report for the bench (see bench.RunWorker).
func cmdBenchWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return bench.RunWorker(ctx, args, buildVersion(), stdout, stderr)
}
