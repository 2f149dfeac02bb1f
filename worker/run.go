package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
)

// summaryEvery is how often a running worker logs its cumulative summary.
const summaryEvery = 10 * time.Minute

// Run polls and publishes until ctx is done, then shuts down in two phases:
// no new polls or sends start, and those in flight finish within the grace
// period. reload, when not nil, receives a value for each SIGHUP.
func (w *Worker) Run(ctx context.Context, reload <-chan struct{}) error {
	cfg := w.config()
	var ln net.Listener
	if cfg.Admin.Listen != "" {
		var err error
		if ln, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
			return fmt.Errorf("admin listen %s: %w", cfg.Admin.Listen, err)
		}
	}

	var wsLn net.Listener
	if w.websub != nil {
		var err error
		if wsLn, err = net.Listen("tcp", cfg.WebSub.Listen); err != nil {
			if ln != nil {
				ln.Close()
			}
			return fmt.Errorf("websub listen %s: %w", cfg.WebSub.Listen, err)
		}
	}

	// A component that fails stops the others the same way a signal does,
	// so shutdown always has its two phases.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	goRun := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}

	if ln != nil {
		admin := w.admin()
		goRun("admin", func(ctx context.Context) error { return admin.Serve(ctx, ln) })
		w.log.Info("admin listening", "addr", ln.Addr().String(), "status", "http://"+ln.Addr().String()+"/")
	}
	if cfg.File != "" {
		watcher, err := config.NewWatcher(cfg, config.WatchOptions{
			Loader:    Loader(w.version),
			Logger:    w.log.With("component", "config"),
			OnChange:  func(c *config.Config) { w.Apply(ctx, c) },
			OnInvalid: func(error) { w.metrics.reloads.WithLabelValues("invalid").Inc() },
		})
		if err != nil {
			w.log.Warn("config file not watched; restart to apply changes", "err", err)
		} else {
			goRun("config watcher", watcher.Run)
			if reload != nil {
				goRun("sighup", func(ctx context.Context) error {
					for {
						select {
						case <-ctx.Done():
							return nil
						case <-reload:
							w.log.Info("SIGHUP: reloading the config")
							watcher.Reload()
						}
					}
				})
			}
		}
	}
	if w.leases != nil {
		goRun("leases", func(ctx context.Context) error { w.leases.Run(ctx); return nil })
	}
	if wsLn != nil {
		goRun("websub", func(ctx context.Context) error { return w.runWebSub(ctx, wsLn) })
		w.log.Info("websub callback listening", "addr", wsLn.Addr().String(), "public_url", cfg.WebSub.PublicURL)
	}
	goRun("store health", func(ctx context.Context) error { w.health.Run(ctx); return nil })
	goRun("publisher", w.pub.Run)
	goRun("store epoch", func(ctx context.Context) error { w.pub.WatchStore(ctx); return nil })
	goRun("poller", w.poller.Run)
	goRun("summary", w.reportSummaries)
	goRun("history", w.runHistory)

	w.log.Info("feedworker running", "version", w.version, "feeds", len(cfg.Feeds), "api", apiName(cfg), "store", storeName(cfg))
	var errs []error
	select {
	case err := <-errc:
		w.log.Error("stopping after a failure", "err", err)
		errs = append(errs, err)
		cancel()
	case <-ctx.Done():
	}
	w.log.Info("stopping: no new polls; in-flight work finishes", "grace", cfg.Publish.ShutdownGrace.D().String())
	wg.Wait()
	// What the sends that finished during the grace period did.
	w.flushHistory(ctx)
	close(errc)
	for err := range errc {
		errs = append(errs, err)
	}
	w.printSummary(context.WithoutCancel(ctx), "feedworker stopped")
	return errors.Join(errs...)
}

// reportSummaries prints a summary once every enabled feed was polled once
// and the outbox holds nothing due, then logs one every summaryEvery.
func (w *Worker) reportSummaries(ctx context.Context) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if w.firstPassDone(ctx) || time.Now().After(deadline) {
			break
		}
	}
	w.printSummary(ctx, "first pass done")
	t := time.NewTicker(summaryEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s := w.Summary(ctx)
			w.log.Info("summary", "feeds", s.Feeds, "polled", s.Polled, "failed", s.Failed,
				"published", s.PublishedTotal(), "updated", s.Updated, "outbox", s.Outbox, "dead_letters", s.DeadLetters)
		}
	}
}

func (w *Worker) firstPassDone(ctx context.Context) bool {
	for _, f := range w.poller.Snapshot() {
		if f.Enabled && !f.Gone && !f.NotOwned && f.LastPoll.IsZero() {
			return false
		}
		if f.Polling {
			return false
		}
	}
	st, err := w.pub.Stats(ctx)
	return err == nil && st.Due == 0
}

// Once polls every enabled feed once, delivers everything due, prints the
// summary and reports whether any feed failed.
func (w *Worker) Once(ctx context.Context) (Summary, error) {
	// Deliver while polling: items of the first feeds go out while later
	// feeds are fetched, rather than all after the last.
	polled := make(chan struct{})
	drained := make(chan error, 1)
	// The store's probe, as in Run: a store marked down (a settle past its
	// timeout behind a long commit) is marked up by nothing else, and the
	// senders and polls waiting for it would wait for ever.
	pctx, stopProbe := context.WithCancel(ctx)
	var probe sync.WaitGroup
	probe.Go(func() { w.health.Run(pctx) })
	defer probe.Wait()
	defer stopProbe()
	go func() { drained <- w.pub.DrainWhile(ctx, polled) }()
	// The history is written as the pass goes, as in Run: held to the end,
	// a large pass's records would pile up in memory (half the live heap
	// at 5,000 feeds) and those past the recorder's bound be lost.
	hctx, stopHistory := context.WithCancel(ctx)
	defer stopHistory()
	var hist sync.WaitGroup
	hist.Go(func() { _ = w.hist.rec.Run(hctx) })
	// Only the failures are kept: every result of a pass held to its end
	// was about 300 bytes a feed.
	type failure struct {
		i   int
		msg string
	}
	var (
		fmu      sync.Mutex
		failures []failure
	)
	w.poller.PollEach(ctx, func(int) {}, func(i int, r feeds.PollResult) {
		if r.Err != nil {
			msg := fmt.Sprintf("%s: %v", r.FeedID, r.Err)
			fmu.Lock()
			failures = append(failures, failure{i, msg})
			fmu.Unlock()
		}
	})
	close(polled)
	// In feed id order, as the pass lists them.
	slices.SortFunc(failures, func(a, b failure) int { return a.i - b.i })
	var failed []string
	for _, f := range failures {
		failed = append(failed, f.msg)
	}
	drainErr := <-drained
	// Once the deliveries are done, what is left does not depend on each
	// other, so it overlaps rather than adding up: the pass's history is
	// written, the leases are given back (nothing renews them after the
	// pass: the next pass, another `once` or a replica, would skip every
	// feed until they expire), and the summary is read and printed.
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		// The writer's last write, then the outbox's depth for the chart.
		stopHistory()
		hist.Wait()
		w.flushHistory(ctx)
	})
	if w.leases != nil {
		wg.Go(func() { w.leases.ReleaseAll(ctx) })
	}
	if drainErr != nil {
		return w.Summary(ctx), fmt.Errorf("deliver: %w", drainErr)
	}
	s := w.printSummary(ctx, "one pass done")
	if len(failed) > 0 {
		return s, &FeedErrors{List: failed}
	}
	return s, nil
}

// FeedErrors says which feeds failed in Once.
type FeedErrors struct{ List []string }

func (e *FeedErrors) Error() string {
	return fmt.Sprintf("%d %s failed:\n  %s", len(e.List), plural("feed", len(e.List)), strings.Join(e.List, "\n  "))
}

// Apply switches to a new valid config: mappings are recompiled and the
// poller adds, removes and reschedules feeds. Items already recorded stay
// recorded, so nothing is posted again. Settings that need a restart (api,
// redis, store, admin) are reported and kept as they were.
func (w *Worker) Apply(ctx context.Context, next *config.Config) {
	mappings, err := compileMappings(next)
	if err != nil {
		w.metrics.reloads.WithLabelValues("invalid").Inc()
		w.log.Error("config reload refused", "err", err)
		return
	}
	w.mu.Lock()
	prev := w.cfg
	w.cfg = next
	w.mappings = mappings
	w.mu.Unlock()
	for _, section := range restartOnly(prev, next) {
		w.log.Warn("config section changed; it takes effect after a restart", "section", section)
	}
	_, removed, _ := config.Diff(prev, next)
	if w.leases != nil {
		w.leases.SetFeeds(polledIDs(next))
		for _, id := range removed {
			if err := w.leases.Release(ctx, id); err != nil {
				w.log.Warn("lease release failed", "feed", id, "err", err)
			}
		}
	}
	w.poller.Update(next.Feeds)
	if w.websub != nil {
		if err := w.websub.SetFeeds(ctx, configuredIDs(next)); err != nil {
			w.log.Warn("websub: unsubscribing feeds that left the config failed", "err", err)
		}
	}
	w.metrics.reloads.WithLabelValues("ok").Inc()
}

// restartOnly names the sections that differ but are only read at start.
// DeepEqual, not their printed forms: those hide secrets, and a rotated
// secret is a change.
func restartOnly(a, b *config.Config) []string {
	var out []string
	for _, sec := range []struct {
		name string
		a, b any
	}{
		{"api", a.API, b.API}, {"redis", a.Redis, b.Redis}, {"store", a.Store, b.Store},
		{"admin", a.Admin, b.Admin}, {"publish", a.Publish, b.Publish}, {"http", a.HTTP, b.HTTP},
		{"websub", a.WebSub, b.WebSub},
	} {
		if !reflect.DeepEqual(sec.a, sec.b) {
			out = append(out, sec.name)
		}
	}
	return out
}

func (w *Worker) config() *config.Config {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cfg
}

// admin builds the admin server with the readiness checks.
func (w *Worker) admin() *Admin {
	a := &Admin{
		Gatherer: w.reg,
		Status:   w.currentStatus,
		Pprof:    w.config().Admin.Pprof,
		Logger:   w.log,
		Console:  w.mountConsole,
		Checks: []Check{
			{Name: "config", Run: func(context.Context) error {
				if w.config() == nil {
					return errors.New("no configuration loaded")
				}
				return nil
			}},
			{Name: "store", Run: func(ctx context.Context) error {
				// The health's state, never a store call: /readyz
				// answers at once while the store hangs.
				return w.StoreProblem()
			}},
			{Name: "api", Run: w.apiCheck()},
			{Name: "api writes", Run: w.writes.check},
		},
	}
	a.Extra = map[string]http.Handler{}
	if w.sandbox != nil {
		a.Extra["/sandbox/"] = w.sandbox.Mount("/sandbox")
	}
	if w.redis == nil {
		// The embedded store's file is locked while this process runs.
		maps.Copy(a.Extra, w.deadLetterRoutes())
	}
	return a
}

// apiCheck proves a token can be obtained and the API answers, with a light
// authenticated read; its answer is reused for a while so that frequent
// probes do not load the API.
func (w *Worker) apiCheck() func(context.Context) error {
	var (
		mu   sync.Mutex
		last time.Time
		err  error
	)
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 15*time.Second {
			return err
		}
		_, _, err = w.client.Reference.ListSubscriberStatuses(ctx)
		last = time.Now()
		return err
	}
}

func apiName(cfg *config.Config) string {
	if cfg.API.BaseURL == config.EmbeddedAPI {
		return "embedded sandbox"
	}
	return cfg.API.BaseURL
}

func storeName(cfg *config.Config) string {
	if !cfg.Redis.Enabled() {
		return "embedded (" + cfg.Store.Path + ")"
	}
	return "redis " + cfg.Redis.Describe()
}
