package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/feedworker/feedworker/worker"
)

// RunWorker is the worker process of one cycle (`feedworker bench
// worker`): what `feedworker once` does (load the config, poll every feed
// once, deliver everything due, print the summary), then the report the
// bench reads, and profiles when asked. args are its flags: --config,
// --report, --cpuprofile and --memprofile; with --floor (and --feeds,
// --concurrency) it is the gofeed-only floor process instead (see [Floor]). version is the worker's
// version.
func RunWorker(ctx context.Context, args []string, version string, stdout, stderr io.Writer) (err error) {
	started := time.Now()
	timing := WorkerTiming{StartedUnixNano: started.UnixNano()}
	fs := flag.NewFlagSet("feedworker bench worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the worker config (required)")
	report := fs.String("report", "", "where to write the report for the bench (required)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the pass here")
	memProfile := fs.String("memprofile", "", "write a heap profile here at the end of the pass")
	ff := addFloorFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ff.base != "" && *report != "" {
		return runFloorChild(ctx, *ff.base, *ff.feeds, *ff.concurrency, *report)
	}
	if *configPath == "" || *report == "" {
		return errors.New("--config and --report are required")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	cfg, err := worker.LoadConfig(*configPath, version)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Log.Level)); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	worker.SetMemoryLimit(cfg.Process, logger)
	w, err := worker.New(ctx, worker.Options{Config: cfg, Version: version, Logger: logger, Out: stdout})
	if err != nil {
		return err
	}
	defer w.Close()
	passStart, cpuStart := time.Now(), processCPU()
	timing.Setup = passStart.Sub(started).Seconds()
	_, err = w.Once(ctx)
	timing.Pass = time.Since(passStart).Seconds()
	timing.PassCPU = processCPU() - cpuStart
	if err != nil {
		var fe *worker.FeedErrors
		if !errors.As(err, &fe) {
			return err
		}
		// Failed polls are counted in the report; the bench fails on them.
		fmt.Fprintln(stderr, fe.Error())
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
		defer f.Close()
		runtime.GC() // the heap profile shows live objects as of the last GC
		if err := pprof.WriteHeapProfile(f); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	return WriteWorkerReport(*report, w.Registry(), timing)
}
