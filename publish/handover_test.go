package publish_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// recordChecker reads an item's record in the store at the moment its
// delivery is reported, and keeps what it finds against an outcome the
// store does not hold yet.
type recordChecker struct {
	t     testing.TB
	store dedupe.Store
	mu    sync.Mutex
	seen  int
	early []string
}

func (c *recordChecker) check(k dedupe.Key, by string) {
	r, ok, err := c.store.Record(context.Background(), k)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	if err != nil || !ok || r.ContentID == 0 || r.PendingHash != "" {
		c.early = append(c.early, fmt.Sprintf("%s reported by the %s while the store holds %+v (found %v, %v)", k, by, r, ok, err))
	}
}

func (c *recordChecker) Accepted(string, time.Time, []publish.Accepted) {}

func (c *recordChecker) Delivered(d publish.Delivery) { c.check(d.Key, "observer") }

// publishedLog hands every "published" log record's item to c.
type publishedLog struct {
	slog.Handler
	c     *recordChecker
	attrs []slog.Attr
}

func (h publishedLog) WithAttrs(as []slog.Attr) slog.Handler {
	return publishedLog{h.Handler.WithAttrs(as), h.c, append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h publishedLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "published" {
		var k dedupe.Key
		for _, a := range h.attrs {
			switch a.Key {
			case "feed":
				k.FeedID = a.Value.String()
			case "external_id":
				k.ExternalID = a.Value.String()
			}
		}
		h.c.check(k, "log")
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h publishedLog) Enabled(context.Context, slog.Level) bool { return true }

// TestDeliveryReportedOnlyOnceRecorded: the observer (the history) and the
// "published" log hear of a delivery only once its outcome is in the
// store, on both stores (on bbolt the sender hands the outcome over and
// goes on before it is recorded).
func TestDeliveryReportedOnlyOnceRecorded(t *testing.T) {
	for _, kind := range []storeKind{onBolt, onRedis} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, sandbox.Faults{})
			c := &recordChecker{t: t, store: e.store}
			p := e.publisher(func(o *publish.Options) {
				o.Observer = c
				o.Logger = slog.New(publishedLog{Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}), c: c})
			})
			var all [][]transform.Payload
			for f := range 3 {
				items := stories(fmt.Sprintf("rep%d", f), 10)
				e.accept(p, fmt.Sprintf("rep%d", f), items, publish.FeedOptions{InitialItems: 100})
				all = append(all, items)
			}
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.exactlyOnce(all...)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.seen != 2*30 {
				t.Errorf("%d reports checked; want 60 (30 items, by the observer and the log)", c.seen)
			}
			for _, s := range c.early {
				t.Error(s)
			}
		})
	}
}

// TestShutdownRecordsOutcomesHandedOver: outcomes handed over and not yet
// recorded when a shutdown comes are recorded before Run returns: every
// item on the service is recorded as delivered, with no pending mark, and
// a restart posts nothing twice.
func TestShutdownRecordsOutcomesHandedOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onBolt, sandbox.Faults{Latency: 20 * time.Millisecond})
	e.log.started = make(chan string, 64)
	p := e.publisher(nil)
	items := stories("stop", 40)
	e.accept(p, "stop", items, publish.FeedOptions{InitialItems: 100})
	cancel, done := e.runUntilPosts(p, 10)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	onService := map[string]bool{}
	for _, it := range e.sb.AllContent() {
		onService[it.ExternalID] = true
	}
	if len(onService) == 0 || len(onService) == len(items) {
		t.Fatalf("%d of %d items on the service after the stop; want some, not all", len(onService), len(items))
	}
	for _, it := range items {
		r, ok, err := e.store.Record(context.Background(), dedupe.Key{FeedID: "stop", ExternalID: it.ExternalID})
		if err != nil || !ok {
			t.Fatalf("record %s: %v, %v", it.ExternalID, ok, err)
		}
		if delivered := r.ContentID != 0 && r.PendingHash == ""; delivered != onService[it.ExternalID] {
			t.Errorf("%s after the stop: on the service %v, record %+v", it.ExternalID, onService[it.ExternalID], r)
		}
	}
	p2 := e.publisher(nil)
	e.runUntilEmpty(p2, 20*time.Second)
	e.exactlyOnce(items)
}

// failingSettles is the embedded store whose outcome writes fail with a
// full disk while fail is set; claims still work.
type failingSettles struct {
	*dedupe.Bolt
	fail atomic.Bool
}

func (f *failingSettles) full(ops []dedupe.ClaimOp) []dedupe.ClaimResult {
	out := make([]dedupe.ClaimResult, len(ops))
	for i := range out {
		out[i].Err = fmt.Errorf("bolt settle: %w", syscall.ENOSPC)
	}
	return out
}

func (f *failingSettles) ClaimOpsLater(ctx context.Context, ops []dedupe.ClaimOp, now time.Time) []dedupe.ClaimResult {
	if f.fail.Load() {
		return f.full(ops)
	}
	return f.Bolt.ClaimOpsLater(ctx, ops, now)
}

func (f *failingSettles) ClaimOps(ctx context.Context, ops []dedupe.ClaimOp, now time.Time) []dedupe.ClaimResult {
	if f.fail.Load() && slices.ContainsFunc(ops, func(op dedupe.ClaimOp) bool { return op.Settle != nil }) {
		return f.full(ops)
	}
	return f.Bolt.ClaimOps(ctx, ops, now)
}

// diskFullHealth goes down at the first full disk and stays down.
type diskFullHealth struct {
	down atomic.Bool
}

func (h *diskFullHealth) Observe(err error) {
	if errors.Is(err, syscall.ENOSPC) {
		h.down.Store(true)
	}
}

func (h *diskFullHealth) Up() bool { return !h.down.Load() }

func (h *diskFullHealth) Wait(ctx context.Context) error {
	if h.Up() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestStopEndsWhileStoreCannotWrite: a stop while the embedded store
// cannot record outcomes (a full disk, the health down) ends once the
// grace is over and the recording under way gives up, as when senders
// waited for their outcomes; it does not wait for the disk. The outcomes
// are left as a crash after the send: a restart once the disk has room
// looks the items up and posts nothing twice.
func TestStopEndsWhileStoreCannotWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onBolt, sandbox.Faults{})
	fs := &failingSettles{Bolt: e.store.(*dedupe.Bolt)}
	fs.fail.Store(true)
	e.store = fs
	e.log.started = make(chan string, 64)
	health := &diskFullHealth{}
	p := e.publisher(func(o *publish.Options) {
		o.Health = health
		o.ShutdownGrace = 200 * time.Millisecond
	})
	items := stories("full", 4)
	e.accept(p, "full", items, publish.FeedOptions{InitialItems: 100})
	cancel, done := e.runUntilPosts(p, 1)
	waitFor(t, 30*time.Second, "the health to go down", func() bool { return !health.Up() })
	cancel()
	// Not a timing assertion: without the grace the stop never ends
	// while the disk is full. With it, it ends after the attempt under
	// way (settleTimeout, 15s) and the grace.
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run still running two minutes after the stop while the store cannot write")
	}
	fs.fail.Store(false)
	e.store = fs.Bolt
	p2 := e.publisher(nil)
	e.runUntilEmpty(p2, 30*time.Second)
	e.exactlyOnce(items)
}

// failingRedisSettles is the Redis store whose outcome writes fail while
// fail is set; claims still work.
type failingRedisSettles struct {
	*dedupe.Redis
	fail atomic.Bool
}

func (f *failingRedisSettles) refused(ops []dedupe.ClaimOp) []dedupe.ClaimResult {
	out := make([]dedupe.ClaimResult, len(ops))
	for i := range out {
		out[i].Err = errors.New("redis settle: connection refused")
	}
	return out
}

func (f *failingRedisSettles) ClaimOps(ctx context.Context, ops []dedupe.ClaimOp, now time.Time) []dedupe.ClaimResult {
	if f.fail.Load() && slices.ContainsFunc(ops, func(op dedupe.ClaimOp) bool { return op.Settle != nil }) {
		return f.refused(ops)
	}
	return f.Redis.ClaimOps(ctx, ops, now)
}

func (f *failingRedisSettles) ClaimOpsLater(ctx context.Context, ops []dedupe.ClaimOp, now time.Time) []dedupe.ClaimResult {
	if f.fail.Load() {
		return f.refused(ops)
	}
	return f.Redis.ClaimOpsLater(ctx, ops, now)
}

// TestDeliveryNotReportedUnlessRecorded: a delivery whose outcome is
// never recorded (the store fails past settleTimeout) is not reported,
// on either store: not by the observer, not by the "published" log. The
// item stays in the outbox, pending, and the drain still ends.
func TestDeliveryNotReportedUnlessRecorded(t *testing.T) {
	for _, kind := range []storeKind{onBolt, onRedis} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, sandbox.Faults{})
			var fail *atomic.Bool
			switch s := e.store.(type) {
			case *dedupe.Bolt:
				fs := &failingSettles{Bolt: s}
				e.store, fail = fs, &fs.fail
			case *dedupe.Redis:
				fs := &failingRedisSettles{Redis: s}
				e.store, fail = fs, &fs.fail
			}
			c := &recordChecker{t: t, store: e.store}
			p := e.publisher(func(o *publish.Options) {
				o.Observer = c
				o.Logger = slog.New(publishedLog{Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}), c: c})
				// The claim outlasts the recording given up on, and the
				// drain's horizon: the item is left, pending, to a later
				// holder.
				o.ClaimTTL = time.Minute
			})
			items := stories("unrec", 2)
			e.accept(p, "unrec", items, publish.FeedOptions{InitialItems: 100})
			fail.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := p.Drain(ctx); err != nil {
				t.Fatalf("Drain: %v", err)
			}
			if n := len(e.sb.AllContent()); n != len(items) {
				t.Fatalf("%d items on the service; want %d sent", n, len(items))
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.seen != 0 {
				t.Errorf("%d reports of deliveries whose outcome was never recorded; want none", c.seen)
			}
			for _, s := range c.early {
				t.Error(s)
			}
			st, err := p.Stats(context.Background())
			if err != nil || st.Outbox != len(items) {
				t.Errorf("outbox after the drain: %+v, %v; want the %d items still in it", st, err, len(items))
			}
		})
	}
}

// TestHandOverTimedApart: on either store an outcome handed over is
// timed as op settle_later (its wait for company included), not as op
// settle, which stays a sender's wait for its write.
func TestHandOverTimedApart(t *testing.T) {
	for _, kind := range []storeKind{onBolt, onRedis} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, sandbox.Faults{})
			reg := prometheus.NewPedanticRegistry()
			p := e.publisher(func(o *publish.Options) { o.Registerer = reg })
			items := stories("timed", 6)
			e.accept(p, "timed", items, publish.FeedOptions{InitialItems: 100})
			if err := p.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.exactlyOnce(items)
			observed := storeOpsTimed(t, reg)
			if observed["settle_later"] != uint64(len(items)) || observed["settle"] != 0 {
				t.Errorf("store operations timed: %v; want %d settle_later (the outcomes handed over), no settle", observed, len(items))
			}
		})
	}
}

// claimWatch is the embedded store counting claims that found nothing.
type claimWatch struct {
	*dedupe.Bolt
	empty atomic.Int64
}

func (c *claimWatch) Claim(ctx context.Context, owner string, n int, ttl time.Duration, now time.Time) ([]dedupe.Claimed, time.Time, error) {
	claimed, next, err := c.Bolt.Claim(ctx, owner, n, ttl, now)
	if err == nil && len(claimed) == 0 {
		c.empty.Add(1)
	}
	return claimed, next, err
}

// TestHandedOverOutcomeWakesClaimer: an item edited while its create is
// in flight is left due, as an update, by the create's outcome; when
// that outcome is handed over and recorded after the claimer went to
// sleep (nothing else due, a poll interval of an hour), its recording
// wakes the claimer, and the update goes out without waiting for the
// next poll.
func TestHandedOverOutcomeWakesClaimer(t *testing.T) {
	t.Parallel()
	posted, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	hold := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v3/story") {
				first.Do(func() { close(posted); <-release })
			}
			next.ServeHTTP(w, r)
		})
	}
	e := newEnvWith(t, onBolt, sandbox.Faults{}, hold)
	cw := &claimWatch{Bolt: e.store.(*dedupe.Bolt)}
	e.store = cw
	p := e.publisher(func(o *publish.Options) {
		o.PollInterval = time.Hour
		o.ClaimTTL = time.Hour
		o.SendTimeout = time.Minute
	})
	items := stories("edited", 1)
	e.accept(p, "edited", items, publish.FeedOptions{InitialItems: 10})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var released sync.Once
	releasePost := func() { released.Do(func() { close(release) }) }
	defer func() {
		releasePost()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	<-posted
	// Edited at the source while its create is in flight: the entry
	// stays, due once the create is recorded. The claimer, woken by the
	// Accept, finds nothing due (the item is claimed) and sleeps.
	before := cw.empty.Load()
	items[0].Title = "edited title"
	items[0] = rehash(items[0])
	if c := e.accept(p, "edited", items, publish.FeedOptions{InitialItems: 10}); c.Updated != 1 {
		t.Fatalf("counts %+v; want 1 updated", c)
	}
	waitFor(t, 30*time.Second, "a claim finding nothing after the edit", func() bool { return cw.empty.Load() > before })
	releasePost()
	waitFor(t, 30*time.Second, "the update on the service", func() bool {
		got := e.sb.ItemsByExternalID(items[0].ExternalID)
		return len(got) == 1 && got[0].Title == "edited title"
	})
}
