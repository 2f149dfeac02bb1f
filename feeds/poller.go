package feeds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedworker/feedworker/config"
	"github.com/prometheus/client_golang/prometheus"
)

// Handler receives what the poller fetched. It is implemented by the worker,
// which maps items, hands them to the publisher's durable outbox and stores
// the validators.
type Handler interface {
	// Validators returns the stored conditional-GET state of a feed. The
	// poller calls it before the first poll of a feed (and again after a
	// handler error or a lost lease) and caches the answer in memory.
	Validators(ctx context.Context, feedID string) (Validators, error)
	// Handle is called for every 200 whose body parsed. It must make the
	// items durable and store res.Validators; only when it returns nil does
	// the poller use res.Validators for the next request. An error counts as
	// a failed poll (class error_store). Once it has mapped the items, it
	// may call res.ReleaseItems to free them before recording them.
	Handle(ctx context.Context, feed config.Feed, res *Result) error
}

// Owner decides whether this replica polls a feed, so several replicas can
// share feeds through leases. It is consulted before every poll.
type Owner interface {
	Own(ctx context.Context, feedID string) (bool, error)
}

// LeaseHolder is an Owner whose ownership is a lease that can end during a
// poll. Hold starts a poll under the lease: its context ends the moment
// this replica can no longer prove it owns the feed, and done is called
// when the poll ends. A poll whose lease ended, or whose Handle failed with
// ErrNotOwned, counts as not owned: another replica polls the feed now.
type LeaseHolder interface {
	Owner
	Hold(ctx context.Context, feedID string) (context.Context, func(), error)
}

// ErrNotOwned, wrapped by a Handler's error, says the replica lost the
// feed's lease before it could commit what it fetched (nothing was
// committed).
var ErrNotOwned = errors.New("feed not owned by this replica any more")

// BatchOwner is an Owner that can answer for many feeds at once. PollAll
// asks it about every feed of the pass first, so that an Owner backed by a
// store takes all their leases in one round trip instead of one per feed.
// Feeds it does not own are skipped; Own is still asked before each poll of
// the others, and answers from what OwnAll took.
type BatchOwner interface {
	Owner
	OwnAll(ctx context.Context, feedIDs []string) (map[string]bool, error)
}

// BatchHandler is a Handler that can load the stored validators of many
// feeds at once. PollAll loads those of every feed it does not know yet
// before polling, in one call instead of one per feed.
type BatchHandler interface {
	Handler
	// ValidatorsAll returns the validators of the feeds that have stored
	// ones; a feed missing from the map has none.
	ValidatorsAll(ctx context.Context, feedIDs []string) (map[string]Validators, error)
}

// PollerOptions configure NewPoller. Handler is required.
type PollerOptions struct {
	// HTTP is the http section of the config: limits, timeouts, intervals.
	HTTP    config.HTTP
	Handler Handler
	// Owner is optional; nil polls every feed.
	Owner Owner
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Registerer receives the poll metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Fetcher defaults to NewFetcher(HTTP).
	Fetcher *Fetcher
	// Grace is how long in-flight polls may run after Run's context is
	// cancelled (default publish.shutdown_grace's); after it their context
	// is cancelled too.
	Grace time.Duration
	// Rand drives first-poll offsets and jitter; default randomly seeded.
	Rand *rand.Rand
	// Observer, when set, is told what every poll did.
	Observer PollObserver
	// Store, when set, is the state of the store polls are recorded in:
	// Run fetches nothing while it is down (a fetch that cannot be
	// recorded is load on the source for nothing), and spreads the polls
	// that fell due meanwhile over storeSpread once it is back.
	Store StoreGate
}

// storeSpread is the window the polls that fell due during a store outage
// are spread over after it: not all at once, and soon enough that what the
// feeds published meanwhile is delivered within seconds.
const storeSpread = 10 * time.Second

// StoreGate is the store's up/down state (PollerOptions.Store).
type StoreGate interface {
	Up() bool
	// Wait returns once the store is up, or ctx's error.
	Wait(ctx context.Context) error
}

// FeedStatus is one feed's line on the status page.
type FeedStatus struct {
	ID string
	// URL is the configured URL and MovedTo the permanent redirect target
	// seen on the last poll, both without credentials.
	URL     string
	MovedTo string
	Enabled bool
	// Gone is set after a 410: the feed is not polled until its config changes.
	Gone bool
	// Polling is set while a poll of the feed is in flight.
	Polling bool
	// NotOwned is set when the Owner said another replica polls the feed.
	NotOwned bool
	// LastPoll is when the last poll ended; LastSuccess when the last 200
	// (handled) or 304 ended.
	LastPoll    time.Time
	LastSuccess time.Time
	// LastResult is the class of the last poll (see Class); empty before it.
	LastResult string
	LastError  string
	// NextPoll is zero when the feed is not scheduled (disabled or gone).
	NextPoll time.Time
	// Failures counts consecutive failed polls.
	Failures int
	// Warnings are the feed-level warnings in force, by code.
	Warnings []Warning
	// ItemsHandled counts items in the documents Handle accepted since start.
	ItemsHandled int64
}

// PollResult is the outcome of one feed in PollAll.
type PollResult struct {
	FeedID string
	// Class is the result class (see Class); empty when Skipped.
	Class string
	// Err is nil for ok and not_modified.
	Err error
	// Skipped is set when the feed was not polled: another replica owns it,
	// it is gone, or ctx ended before a slot was free.
	Skipped bool
	// Result is what Fetch returned, possibly nil, without the parsed
	// document (Feed is nil): the handler had it, and a pass over
	// thousands of feeds must not hold every document until it ends.
	Result *Result
}

// Poller polls every configured feed on its own schedule, within a global
// and a per-host limit of fetches in flight. Use Update to set the feeds,
// Run to poll until cancelled, or PollAll for one pass.
type Poller struct {
	fetcher  *Fetcher
	handler  Handler
	owner    Owner
	observer PollObserver
	store    StoreGate
	log      *slog.Logger
	sched    Schedule
	metrics  *metrics
	grace    time.Duration
	maxConc  int
	perHost  int
	// follow polls a moved feed at its new URL (http.follow_permanent_redirects).
	follow  bool
	running atomic.Bool

	// wake nudges Run's loop after Update or a finished poll.
	wake chan struct{}

	mu       sync.Mutex
	feeds    map[string]*feedState
	rnd      *rand.Rand
	inFlight int
	hosts    map[string]int
	// released is closed and replaced whenever a fetch slot frees up, to wake
	// every PollAll goroutine waiting for one.
	released chan struct{}
}

// feedState is the poller's memory of one feed, guarded by Poller.mu.
type feedState struct {
	// cfg points into the list given to Update, not a copy: a config is
	// never changed after Load, and a copy per feed was 512 bytes.
	cfg      *config.Feed
	host     string
	interval time.Duration
	enabled  bool
	removed  bool

	validators      Validators
	validatorsKnown bool // false: ask the handler before the next poll
	// stateKnown is false until the stored poll state was read (see
	// StateHandler); saved is the state last read or written, nil for the
	// zero state (a healthy feed's: most feeds).
	stateKnown bool
	saved      *PollState
	// warns are the feed's warnings, nil while it has none (most feeds).
	// Kept apart, like saved, because a feed's state is the poller's
	// memory of it for as long as it is configured: 448 bytes a feed
	// became 288.
	warns *feedWarnings
	// freshURL: the URL changed, so the store's validators belong to the old
	// URL; poll without any until Handle succeeded once.
	freshURL bool
	// epoch changes with the URL so an in-flight poll of the old URL does
	// not write its state over the new one.
	epoch uint64

	next      time.Time
	inFlight  bool
	gone      bool
	notOwned  bool
	movedTo   string
	lastPoll  time.Time
	lastOK    time.Time
	lastClass string
	lastErr   string
	failures  int
	outcome   Outcome
	items     int64
	// ttl is the last document's <ttl>: a 304 has no body to read it from,
	// yet the feed still asks for it.
	ttl time.Duration
}

func (fs *feedState) scheduled() bool {
	return fs.enabled && !fs.gone && !fs.removed
}

// NewPoller builds a Poller with no feeds; call Update to add them.
func NewPoller(o PollerOptions) (*Poller, error) {
	if o.Handler == nil {
		return nil, errors.New("new poller: a handler is required")
	}
	f := o.Fetcher
	if f == nil {
		var err error
		if f, err = NewFetcher(o.HTTP); err != nil {
			return nil, fmt.Errorf("new poller: %w", err)
		}
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new poller: %w", err)
	}
	p := &Poller{
		fetcher:  f,
		handler:  o.Handler,
		owner:    o.Owner,
		observer: o.Observer,
		store:    o.Store,
		log:      o.Logger,
		sched:    NewSchedule(o.HTTP),
		metrics:  m,
		grace:    o.Grace,
		maxConc:  o.HTTP.MaxConcurrency,
		perHost:  o.HTTP.PerHostConcurrency,
		follow:   o.HTTP.FollowPermanentRedirects == nil || *o.HTTP.FollowPermanentRedirects,
		wake:     make(chan struct{}, 1),
		feeds:    make(map[string]*feedState),
		rnd:      o.Rand,
		hosts:    make(map[string]int),
		released: make(chan struct{}),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	// Zero options take config.Default's.
	def := config.Default()
	if p.grace <= 0 {
		p.grace = def.Publish.ShutdownGrace.D()
	}
	if p.maxConc <= 0 {
		p.maxConc = def.HTTP.MaxConcurrency
	}
	if p.perHost <= 0 {
		p.perHost = def.HTTP.PerHostConcurrency
	}
	if p.rnd == nil {
		p.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return p, nil
}

// Schedule returns the schedule the poller uses.
func (p *Poller) Schedule() Schedule { return p.sched }

// hostOf is the per-host limit key: scheme-less host:port, lower-cased.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// Update applies a new list of feeds (a reload). New feeds are scheduled at a
// random point within their interval; removed feeds stop (a poll in flight
// finishes but its result is dropped); changed feeds take the new settings:
// a new URL forgets the validators, the failure count and the gone mark and
// is scheduled like a new feed; a new interval or enabled flag reschedules
// from the last poll; any change lifts a gone mark. Identical feeds keep all
// their state and their next poll time. Feeds with an id already seen in the
// list are ignored with a warning (config validation rejects them anyway).
// The poller keeps pointers into feeds: the caller must not change the list
// afterwards (a loaded config is never changed; a reload is a new one).
func (p *Poller) Update(feeds []config.Feed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	seen := make(map[string]bool, len(feeds))
	for i := range feeds {
		c := &feeds[i]
		if seen[c.ID] {
			p.log.Warn("duplicate feed id in update; keeping the first", "feed", c.ID)
			continue
		}
		seen[c.ID] = true
		interval := p.sched.Interval(c.Interval)
		enabled := c.Enabled == nil || *c.Enabled
		fs, ok := p.feeds[c.ID]
		if !ok {
			fs = &feedState{cfg: c, host: hostOf(c.URL), interval: interval, enabled: enabled}
			fs.next = p.sched.First(now, interval, p.rnd)
			p.feeds[c.ID] = fs
			p.log.Debug("feed added", "feed", c.ID, "url", config.RedactURL(c.URL), "first_poll", fs.next)
			continue
		}
		if reflect.DeepEqual(*fs.cfg, *c) {
			fs.cfg = c // the same settings: hold the new list, let the old one go
			continue
		}
		urlChanged := fs.cfg.URL != c.URL
		reschedule := urlChanged || fs.gone || fs.interval != interval || fs.enabled != enabled
		fs.cfg, fs.interval, fs.enabled, fs.gone = c, interval, enabled, false
		if urlChanged {
			fs.epoch++
			fs.host = hostOf(c.URL)
			fs.validators, fs.validatorsKnown, fs.freshURL = Validators{}, true, true
			fs.failures, fs.outcome, fs.movedTo, fs.notOwned, fs.ttl = 0, Outcome{}, "", false, 0
			// The stored state is the old URL's: it is ignored, then replaced.
			fs.setWarnings(nil, fs.warnings())
		}
		if reschedule {
			if urlChanged || fs.lastPoll.IsZero() {
				fs.next = p.sched.First(now, interval, p.rnd)
			} else {
				fs.next = p.sched.Next(fs.lastPoll, interval, fs.outcome, p.rnd)
				if fs.next.Before(now) {
					fs.next = now
				}
			}
		}
		p.log.Debug("feed changed", "feed", c.ID, "url_changed", urlChanged, "next_poll", fs.next)
	}
	for id, fs := range p.feeds {
		if !seen[id] {
			fs.removed = true
			delete(p.feeds, id)
			p.metrics.forget(id)
			p.log.Debug("feed removed", "feed", id)
		}
	}
	p.updateGaugesLocked()
	p.nudge()
}

func (p *Poller) updateGaugesLocked() {
	var enabled, gone, moved int
	for _, fs := range p.feeds {
		if fs.enabled {
			enabled++
		}
		if fs.gone {
			gone++
		}
		if fs.movedTo != "" {
			moved++
		}
	}
	p.metrics.configured.Set(float64(enabled))
	p.metrics.gone.Set(float64(gone))
	p.metrics.moved.Set(float64(moved))
}

func (p *Poller) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Snapshot returns the status of every configured feed, sorted by id.
func (p *Poller) Snapshot() []FeedStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]FeedStatus, 0, len(p.feeds))
	for _, fs := range p.feeds {
		st := FeedStatus{
			ID:           fs.cfg.ID,
			URL:          config.RedactURL(fs.cfg.URL),
			Enabled:      fs.enabled,
			Gone:         fs.gone,
			Polling:      fs.inFlight,
			NotOwned:     fs.notOwned,
			LastPoll:     fs.lastPoll,
			LastSuccess:  fs.lastOK,
			LastResult:   fs.lastClass,
			LastError:    fs.lastErr,
			Failures:     fs.failures,
			Warnings:     slices.Clone(fs.currentWarningsLocked()),
			ItemsHandled: fs.items,
		}
		if fs.movedTo != "" {
			st.MovedTo = config.RedactURL(fs.movedTo)
		}
		if fs.scheduled() {
			st.NextPoll = fs.next
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b FeedStatus) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Run polls feeds as they fall due until ctx is cancelled. Then it starts no
// new poll and waits for the polls in flight: they keep a context that is
// only cancelled when the grace period runs out, so a handler is not cut off
// halfway through handing items over. Run returns nil after shutdown, or an
// error if it is already running.
func (p *Poller) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("poller: run called twice")
	}
	defer p.running.Store(false)

	polls, cancelPolls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPolls()
	var wg sync.WaitGroup

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if p.store != nil && !p.store.Up() {
			if p.store.Wait(ctx) != nil {
				return p.shutdown(&wg, cancelPolls)
			}
			p.spreadDue()
		}
		wait := p.dispatch(polls, &wg)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return p.shutdown(&wg, cancelPolls)
		case <-p.wake:
		case <-timer.C:
		}
	}
}

func (p *Poller) shutdown(wg *sync.WaitGroup, cancelPolls context.CancelFunc) error {
	p.mu.Lock()
	n := p.inFlight
	p.mu.Unlock()
	p.log.Info("poller stopping", "in_flight", n, "grace", p.grace)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(p.grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		p.log.Warn("poller grace period over; cancelling polls in flight")
		cancelPolls()
		<-done
	}
	p.log.Info("poller stopped")
	return nil
}

// spreadDue moves the polls that fell due while the store was down to
// random times within the spread window, so that they do not all start,
// and hit the store and the sources, at once.
func (p *Poller) spreadDue() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, fs := range p.feeds {
		if fs.scheduled() && !fs.inFlight && !fs.next.After(now) {
			fs.next = now.Add(time.Duration(p.rnd.Int64N(int64(storeSpread))))
		}
	}
}

// idleWait is how long Run sleeps when no feed is scheduled; Update wakes it.
const idleWait = time.Hour

// dispatch starts every due poll that fits the limits and returns how long
// to sleep until the next one falls due.
func (p *Poller) dispatch(ctx context.Context, wg *sync.WaitGroup) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var due []*feedState
	wait := idleWait
	for _, fs := range p.feeds {
		if !fs.scheduled() || fs.inFlight {
			continue
		}
		if d := fs.next.Sub(now); d > 0 {
			wait = min(wait, d)
			continue
		}
		due = append(due, fs)
	}
	// Most overdue first, so a backlog drains in order.
	slices.SortFunc(due, func(a, b *feedState) int { return a.next.Compare(b.next) })
	for _, fs := range due {
		if p.inFlight >= p.maxConc {
			// A finishing poll nudges the loop.
			break
		}
		if p.hosts[fs.host] >= p.perHost {
			continue
		}
		job := p.startLocked(fs)
		wg.Go(func() { p.poll(ctx, job) })
	}
	return wait
}

// job is one poll's view of its feed, copied under the lock at start.
type job struct {
	fs         *feedState
	cfg        config.Feed
	host       string
	epoch      uint64
	validators Validators
	known      bool
	// url is what is fetched: the config's, or where the feed moved to.
	url        string
	stateKnown bool
}

func (p *Poller) startLocked(fs *feedState) job {
	fs.inFlight = true
	p.inFlight++
	p.hosts[fs.host]++
	return job{fs: fs, cfg: *fs.cfg, host: fs.host, epoch: fs.epoch, validators: fs.validators, known: fs.validatorsKnown,
		url: p.fetchURLLocked(fs), stateKnown: fs.stateKnown}
}

// tryStartLocked starts a poll of fs if it is idle and the limits allow.
func (p *Poller) tryStartLocked(fs *feedState) (job, bool) {
	if fs.inFlight || p.inFlight >= p.maxConc || p.hosts[fs.host] >= p.perHost {
		return job{}, false
	}
	return p.startLocked(fs), true
}
