package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe"
)

// storeProbeEvery is how often the store is probed: while it is down, to
// find it back within a second; while Redis is up, so that a hang is
// noticed before the next poll fetches a feed it could not record.
const storeProbeEvery = time.Second

// storeHealth is the store as one state, up or down, instead of one error
// per feed and item: one WARN when it goes down (with the cause), one INFO
// when it is back (how long, what waited), feedworker_store_up and
// feedworker_store_outages_total. The poller and the publisher wait on it
// rather than fail against a store that does not answer.
type storeHealth struct {
	log  *slog.Logger
	name string
	// probe asks the store something cheap, within its own bound.
	probe func(ctx context.Context) error
	// probeUp: probe while up too (Redis), not only while down.
	probeUp bool
	// backlog reads, when the store is back, the polls that fell due and
	// the items waiting in the outbox.
	backlog func(ctx context.Context) (polls, items int)
	// explain, when set, words a cause in terms of the setting to fix
	// (RedisProblem).
	explain func(error) error
	timeout time.Duration

	upGauge prometheus.Gauge
	outages prometheus.Counter

	mu    sync.Mutex
	down  bool
	since time.Time
	cause string
	// back is closed while the store is up; a fresh one is made when it
	// goes down.
	back chan struct{}
}

func newStoreHealth(reg prometheus.Registerer, log *slog.Logger, name string, timeout time.Duration) *storeHealth {
	h := &storeHealth{
		log: log, name: name, timeout: timeout, back: make(chan struct{}),
		upGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "feedworker_store_up",
			Help: "1 while the store (Redis or the embedded file) answers, 0 while it is down: nothing is fetched or delivered meanwhile.",
		}),
		outages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedworker_store_outages_total",
			Help: "Times the store stopped answering (an error or no answer within redis.timeout).",
		}),
	}
	close(h.back)
	h.upGauge.Set(1)
	reg.MustRegister(h.upGauge, h.outages)
	return h
}

// Observe hears a store call's error; one that says the store is
// unreachable marks it down. Only the probe marks it up again, so that
// one INFO line tells the whole outage.
func (h *storeHealth) Observe(err error) {
	if err != nil && storeOutage(err) {
		h.markDown(err)
	}
}

// Up reports whether the store answers.
func (h *storeHealth) Up() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
}

// Wait returns once the store is up, or ctx's error.
func (h *storeHealth) Wait(ctx context.Context) error {
	h.mu.Lock()
	back := h.back
	h.mu.Unlock()
	select {
	case <-back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Problem is nil while the store is up, else why it is down and since
// when: what /readyz and the console show.
func (h *storeHealth) Problem() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return nil
	}
	// The cause first: it names the setting to check.
	return fmt.Errorf("%s (down for %s)", h.cause, time.Since(h.since).Round(time.Second))
}

func (h *storeHealth) markDown(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return
	}
	if h.explain != nil {
		err = h.explain(err)
	}
	h.down, h.since, h.cause = true, time.Now(), err.Error()
	h.back = make(chan struct{})
	h.upGauge.Set(0)
	h.outages.Inc()
	msg := "store unreachable: no feed is fetched and nothing delivered until it answers; errors it causes are logged at DEBUG meanwhile"
	if diskFull(err) {
		msg = "store cannot write (disk full, over quota, read-only or failing): no feed is fetched and nothing delivered until a write passes again; nothing recorded is lost; errors it causes are logged at DEBUG meanwhile"
	}
	h.log.Warn(msg, "store", h.name, "cause", h.cause)
}

func (h *storeHealth) markUp(ctx context.Context) {
	h.mu.Lock()
	since := h.since
	h.mu.Unlock()
	// Read before the poller and publisher resume, so the numbers are the
	// outage's.
	var polls, items int
	if h.backlog != nil {
		bctx, cancel := context.WithTimeout(ctx, h.timeout)
		polls, items = h.backlog(bctx)
		cancel()
	}
	h.mu.Lock()
	h.down = false
	close(h.back)
	h.mu.Unlock()
	h.upGauge.Set(1)
	h.log.Info("store reachable again; fetching and delivery resume", "store", h.name,
		"down_for", time.Since(since).Round(time.Millisecond).String(), "skipped_polls", polls, "waiting_items", items)
}

// Run probes the store until ctx is done.
func (h *storeHealth) Run(ctx context.Context) {
	t := time.NewTicker(storeProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		down := !h.Up()
		if !down && !h.probeUp {
			continue
		}
		// Past the client's own bounds, so that the cause logged is the
		// client's (an i/o timeout, a refused dial), not this deadline.
		pctx, cancel := context.WithTimeout(ctx, 3*h.timeout)
		err := h.probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			// Any failed probe: a server that refuses the credentials
			// is as unusable as one that does not answer.
			h.markDown(err)
		case down:
			h.markUp(ctx)
		}
	}
}

// storeOutage reports whether err says the store cannot be reached or
// cannot write (as opposed to refusing one request): the network, a
// timeout, a server loading or without a master, a full or read-only
// disk.
func storeOutage(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, redis.Nil) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, dedupe.ErrStoreTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE,
		syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.EFBIG} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var re redis.Error
	if errors.As(err, &re) {
		for _, p := range []string{"LOADING", "MASTERDOWN", "CLUSTERDOWN", "READONLY", "BUSY "} {
			if strings.HasPrefix(re.Error(), p) {
				return true
			}
		}
	}
	return false
}

// diskFull reports whether err is a write the disk refused.
func diskFull(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.EFBIG} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// healthHook reports every Redis command's outcome to the health: the
// first command that meets a frozen or stopped server marks it down, for
// every caller (history, leases, the rate budget), not only the publisher.
type healthHook struct{ h *storeHealth }

func (k healthHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (k healthHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if ctx.Err() == nil {
			k.h.Observe(err)
		}
		return err
	}
}

func (k healthHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if ctx.Err() == nil {
			k.h.Observe(err)
		}
		return err
	}
}

// quietWhileDown is a log handler that turns the WARN and ERROR lines
// caused by the store into DEBUG while the store is down: the outage is
// told once by storeHealth, not once per feed and item.
type quietWhileDown struct {
	slog.Handler
	h *storeHealth
}

func (q quietWhileDown) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && q.h != nil && !q.h.Up() && storeCaused(r) {
		if !q.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietWhileDown) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, l)
}

func (q quietWhileDown) WithAttrs(as []slog.Attr) slog.Handler {
	return quietWhileDown{q.Handler.WithAttrs(as), q.h}
}

func (q quietWhileDown) WithGroup(name string) slog.Handler {
	return quietWhileDown{q.Handler.WithGroup(name), q.h}
}

// storeCaused reports whether a record carries an error the store's
// outage explains.
func storeCaused(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && storeOutage(err) {
			found = true
			return false
		}
		return true
	})
	return found
}

// watchStore connects the health to the open store, down at once when
// problem (the check at open) is set. Redis reports every command through
// a hook and is probed with PING; the embedded store reports through the
// publisher and is probed, while down, with a read.
func (w *Worker) watchStore(problem error) {
	h := w.health
	if w.redis != nil {
		r := w.cfg.Redis
		h.explain = func(err error) error {
			if _, told := errors.AsType[*redisProblem](err); told {
				return err
			}
			return RedisProblem(r, err)
		}
		w.redis.AddHook(healthHook{h})
		h.probe = func(ctx context.Context) error { return w.redis.Ping(ctx).Err() }
		h.probeUp = true
	} else if pw, ok := w.store.(interface{ ProbeWrite(context.Context) error }); ok {
		// A read passes on a full or read-only disk: only a write says
		// the store can record again.
		h.probe = pw.ProbeWrite
	} else {
		h.probe = func(ctx context.Context) error { _, err := w.store.Stats(ctx, time.Now()); return err }
	}
	if problem != nil {
		h.markDown(problem)
	}
	h.backlog = func(ctx context.Context) (polls, items int) {
		now := time.Now()
		if w.poller != nil {
			for _, f := range w.poller.Snapshot() {
				if f.Enabled && !f.Gone && !f.NotOwned && !f.Polling && !f.NextPoll.IsZero() && !f.NextPoll.After(now) {
					polls++
				}
			}
		}
		if st, err := w.store.Stats(ctx, now); err == nil {
			items = st.Outbox
		}
		return polls, items
	}
}

// StoreProblem is nil while the store answers, else why it does not: for
// readiness and the console, answered from memory (never waits on the
// store).
func (w *Worker) StoreProblem() error { return w.health.Problem() }
