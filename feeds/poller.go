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

// Poller defaults, used when the matching option is zero.
const (
	DefaultMaxConcurrency     = 32
	DefaultPerHostConcurrency = 4
	DefaultGrace              = 30 * time.Second
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
	// a failed poll (class error_store).
	Handle(ctx context.Context, feed config.Feed, res *Result) error
}

// Owner decides whether this replica polls a feed, so several replicas can
// share feeds through leases. It is consulted before every poll.
type Owner interface {
	Own(ctx context.Context, feedID string) (bool, error)
}

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
	// cancelled (default 30s); after it their context is cancelled too.
	Grace time.Duration
	// Rand drives first-poll offsets and jitter; default randomly seeded.
	Rand *rand.Rand
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
	fetcher *Fetcher
	handler Handler
	owner   Owner
	log     *slog.Logger
	sched   Schedule
	metrics *metrics
	grace   time.Duration
	maxConc int
	perHost int
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
	cfg      config.Feed
	host     string
	interval time.Duration
	enabled  bool
	removed  bool

	validators      Validators
	validatorsKnown bool // false: ask the handler before the next poll
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
		log:      o.Logger,
		sched:    NewSchedule(o.HTTP),
		metrics:  m,
		grace:    o.Grace,
		maxConc:  o.HTTP.MaxConcurrency,
		perHost:  o.HTTP.PerHostConcurrency,
		wake:     make(chan struct{}, 1),
		feeds:    make(map[string]*feedState),
		rnd:      o.Rand,
		hosts:    make(map[string]int),
		released: make(chan struct{}),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	if p.maxConc <= 0 {
		p.maxConc = DefaultMaxConcurrency
	}
	if p.perHost <= 0 {
		p.perHost = DefaultPerHostConcurrency
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
func (p *Poller) Update(feeds []config.Feed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	seen := make(map[string]bool, len(feeds))
	for _, c := range feeds {
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
		if reflect.DeepEqual(fs.cfg, c) {
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
}

func (p *Poller) startLocked(fs *feedState) job {
	fs.inFlight = true
	p.inFlight++
	p.hosts[fs.host]++
	return job{fs: fs, cfg: fs.cfg, host: fs.host, epoch: fs.epoch, validators: fs.validators, known: fs.validatorsKnown}
}

// tryStartLocked starts a poll of fs if it is idle and the limits allow.
func (p *Poller) tryStartLocked(fs *feedState) (job, bool) {
	if fs.inFlight || p.inFlight >= p.maxConc || p.hosts[fs.host] >= p.perHost {
		return job{}, false
	}
	return p.startLocked(fs), true
}

// PollAll polls every enabled feed once, concurrently within the limits, and
// reports each outcome in id order (for `feedworker once`). It updates the
// feeds' state like scheduled polls do. If Run is polling a feed at the same
// time, PollAll waits for that poll and then polls again.
//
// One goroutine starts the polls as fetch slots free up, so a pass over
// thousands of feeds does not wake thousands of waiters per finished poll.
// With a BatchOwner and a BatchHandler, the leases and validators of the
// whole pass are loaded first, in one call each.
func (p *Poller) PollAll(ctx context.Context) []PollResult {
	p.mu.Lock()
	var targets []*feedState
	for _, fs := range p.feeds {
		if fs.enabled {
			targets = append(targets, fs)
		}
	}
	slices.SortFunc(targets, func(a, b *feedState) int { return cmp.Compare(a.cfg.ID, b.cfg.ID) })
	p.mu.Unlock()

	results := make([]PollResult, len(targets))
	notOwned := p.ownAll(ctx, targets)
	owned := targets
	if len(notOwned) > 0 {
		owned = slices.DeleteFunc(slices.Clone(targets), func(fs *feedState) bool { return notOwned[fs.cfg.ID] })
	}
	p.loadValidators(ctx, owned)

	// Feeds still to start, by host, so that a host at its limit is
	// passed over at once rather than feed by feed.
	type waiting struct {
		i  int
		fs *feedState
	}
	queues := map[string][]waiting{}
	var hosts []string
	left := 0
	p.mu.Lock()
	for i, fs := range targets {
		if notOwned[fs.cfg.ID] {
			p.finishNotOwnedLocked(fs, fs.epoch)
			results[i] = PollResult{FeedID: fs.cfg.ID, Skipped: true}
			continue
		}
		if _, ok := queues[fs.host]; !ok {
			hosts = append(hosts, fs.host)
		}
		queues[fs.host] = append(queues[fs.host], waiting{i, fs})
		left++
	}
	p.mu.Unlock()

	var wg sync.WaitGroup
	for left > 0 {
		p.mu.Lock()
		kept := hosts[:0] // hosts with feeds left, in their first order
		for x, h := range hosts {
			if p.inFlight >= p.maxConc {
				kept = append(kept, hosts[x:]...)
				break
			}
			q := queues[h]
			for k := 0; k < len(q) && p.inFlight < p.maxConc && p.hosts[h] < p.perHost; {
				w := q[k]
				fs, id := w.fs, w.fs.cfg.ID
				var j job
				started := false
				switch {
				case fs.removed:
					results[w.i] = PollResult{FeedID: id, Skipped: true}
				case fs.gone:
					results[w.i] = PollResult{FeedID: id, Class: ClassGone, Skipped: true,
						Err: fmt.Errorf("feed %s: %w; not polled until its config changes", id, ErrGone)}
				default:
					if j, started = p.tryStartLocked(fs); !started {
						k++ // Run is polling it: try again when a slot frees
						continue
					}
				}
				if k == 0 {
					q = q[1:]
				} else {
					q = append(q[:k], q[k+1:]...)
				}
				left--
				if started {
					wg.Go(func() { results[w.i] = p.poll(ctx, j) })
				}
			}
			if len(q) == 0 {
				delete(queues, h)
				continue
			}
			queues[h] = q
			kept = append(kept, h)
		}
		hosts = kept
		released := p.released
		p.mu.Unlock()
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			for _, q := range queues {
				for _, w := range q {
					id := w.fs.cfg.ID
					results[w.i] = PollResult{FeedID: id, Class: Class(ctx.Err()), Skipped: true,
						Err: fmt.Errorf("feed %s: waiting for a fetch slot: %w", id, ctx.Err())}
				}
			}
			left = 0
		case <-released:
		}
	}
	wg.Wait()
	return results
}

// ownAll asks a BatchOwner about every target at once and returns the
// feeds it does not own. On an error, or without a BatchOwner, it returns
// nil: each poll asks Own as usual.
func (p *Poller) ownAll(ctx context.Context, targets []*feedState) map[string]bool {
	bo, ok := p.owner.(BatchOwner)
	if !ok || len(targets) == 0 {
		return nil
	}
	ids := make([]string, len(targets))
	for i, fs := range targets {
		ids[i] = fs.cfg.ID
	}
	owned, err := bo.OwnAll(ctx, ids)
	if err != nil {
		p.log.Warn("feed ownership check of the pass failed; asking per feed", "feeds", len(ids), "error", err)
		return nil
	}
	notOwned := map[string]bool{}
	for _, id := range ids {
		if !owned[id] {
			notOwned[id] = true
		}
	}
	return notOwned
}

// loadValidators loads, through a BatchHandler, the validators of the
// targets the poller does not know yet. On an error each poll loads its own.
func (p *Poller) loadValidators(ctx context.Context, targets []*feedState) {
	bh, ok := p.handler.(BatchHandler)
	if !ok {
		return
	}
	type want struct {
		fs    *feedState
		epoch uint64
	}
	var wants []want
	var ids []string
	p.mu.Lock()
	for _, fs := range targets {
		if !fs.validatorsKnown && !fs.inFlight {
			wants = append(wants, want{fs, fs.epoch})
			ids = append(ids, fs.cfg.ID)
		}
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	vs, err := bh.ValidatorsAll(ctx, ids)
	if err != nil {
		p.log.Warn("loading the validators of the pass failed; loading per feed", "feeds", len(ids), "error", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range wants {
		fs := w.fs
		// A poll by Run or a reload may have moved the feed on meanwhile.
		if fs.removed || fs.epoch != w.epoch || fs.validatorsKnown || fs.inFlight {
			continue
		}
		fs.validators, fs.validatorsKnown = vs[fs.cfg.ID], true
	}
}

// poll runs one poll of a started job and records its outcome.
func (p *Poller) poll(ctx context.Context, j job) PollResult {
	id := j.cfg.ID
	if p.owner != nil {
		own, err := p.owner.Own(ctx, id)
		if err != nil {
			err = fmt.Errorf("feed %s: ownership check: %w", id, err)
			p.log.Warn("feed ownership check failed; skipping this poll", "feed", id, "error", err)
		}
		if err != nil || !own {
			p.finishNotOwned(j)
			return PollResult{FeedID: id, Skipped: true, Err: err}
		}
	}

	v, loaded := j.validators, false
	if !j.known {
		var err error
		if v, err = p.handler.Validators(ctx, id); err != nil {
			err = fmt.Errorf("feed %s: load validators: %w", id, &HandlerError{Err: err})
			p.finish(j, nil, err, false, 0)
			return PollResult{FeedID: id, Class: ClassStore, Err: err}
		}
		loaded = true
		j.validators = v
	}

	start := time.Now()
	res, err := p.fetcher.Fetch(ctx, j.cfg.URL, v)
	elapsed := time.Since(start)
	if err == nil && !res.NotModified {
		if herr := p.handler.Handle(ctx, j.cfg, res); herr != nil {
			err = fmt.Errorf("feed %s: %w", id, &HandlerError{Err: herr})
		}
	}
	class := p.finish(j, res, err, loaded, elapsed)
	if res != nil && res.Feed != nil {
		r := *res
		r.Feed = nil
		res = &r
	}
	return PollResult{FeedID: id, Class: class, Err: err, Result: res}
}

// releaseLocked frees the job's fetch slots and wakes whoever waits for one.
func (p *Poller) releaseLocked(j job) {
	j.fs.inFlight = false
	p.inFlight--
	if p.hosts[j.host]--; p.hosts[j.host] <= 0 {
		delete(p.hosts, j.host)
	}
	close(p.released)
	p.released = make(chan struct{})
	p.nudge()
}

func (p *Poller) finishNotOwned(j job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(j)
	p.finishNotOwnedLocked(j.fs, j.epoch)
}

// finishNotOwnedLocked records that another replica owns fs.
func (p *Poller) finishNotOwnedLocked(fs *feedState, epoch uint64) {
	if fs.removed || fs.epoch != epoch {
		return
	}
	// Another replica may update the stored validators meanwhile; reload
	// them if this replica gets the feed back.
	if !fs.freshURL {
		fs.validatorsKnown = false
	}
	fs.notOwned = true
	fs.next = p.sched.Next(time.Now(), fs.interval, Outcome{}, p.rnd)
	p.log.Debug("feed owned by another replica; poll skipped", "feed", fs.cfg.ID, "next_poll", fs.next)
}

// finish records a poll's outcome: metrics, state, next poll time, logs.
// loaded says the validators in j were just read from the handler.
func (p *Poller) finish(j job, res *Result, err error, loaded bool, elapsed time.Duration) string {
	id := j.cfg.ID
	class := Class(err)
	if err == nil && res != nil && res.NotModified {
		class = ClassNotModified
	}
	fetched := res != nil || class != ClassStore
	success := class == ClassOK || class == ClassNotModified
	now := time.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(j)
	fs := j.fs
	if fs.removed {
		p.log.Debug("poll of removed feed finished", "feed", id, "result", class)
		return class
	}
	p.metrics.polls.WithLabelValues(id, class).Inc()
	if fetched {
		p.metrics.duration.WithLabelValues(class).Observe(elapsed.Seconds())
	}
	if res != nil && res.Bytes > 0 {
		p.metrics.bytes.WithLabelValues(id).Add(float64(res.Bytes))
	}
	if success {
		p.metrics.lastSuccess.WithLabelValues(id).Set(float64(now.UnixNano()) / 1e9)
	}
	if fs.epoch != j.epoch {
		// The URL changed while this poll ran: its result is about the old
		// URL, and Update already scheduled the new one.
		return class
	}

	fs.lastPoll, fs.lastClass, fs.notOwned = now, class, false
	fs.lastErr = ""
	if err != nil {
		fs.lastErr = err.Error()
	}
	if loaded {
		fs.validators, fs.validatorsKnown = j.validators, true
	}
	var items int
	if res != nil && res.Feed != nil {
		items = len(res.Feed.Items)
	}
	switch {
	case class == ClassOK:
		// Only now are the new validators safe: the body was read in full,
		// parsed, and the handler made the items durable.
		fs.validators, fs.validatorsKnown, fs.freshURL = res.Validators, true, false
		fs.items += int64(items)
		fs.ttl = feedHint(res.Feed)
	case class == ClassStore && !fs.freshURL:
		// The store may or may not hold what Handle tried to write; ask it.
		fs.validatorsKnown = false
	}
	// The gauges count over every feed; recount them only when this poll
	// changed what they count, or a pass over N feeds costs N².
	gauges := false
	if res != nil && (success || class == ClassGone) {
		if res.MovedTo != "" && res.MovedTo != fs.movedTo {
			p.log.Info("feed moved permanently; update its url in the config",
				"feed", id, "url", config.RedactURL(j.cfg.URL), "moved_to", config.RedactURL(res.MovedTo))
		}
		gauges = fs.movedTo != res.MovedTo
		fs.movedTo = res.MovedTo
	}

	o := Outcome{}
	if success {
		fs.failures = 0
		fs.lastOK = now
		o.Hint = fs.ttl
		if res != nil {
			o.Hint = max(res.Hint, fs.ttl)
		}
	} else {
		fs.failures++
		o.Failures = fs.failures
		var ra *RetryAfterError
		if errors.As(err, &ra) {
			o.RetryAfter = ra.RetryAfter
		}
	}
	fs.outcome = o
	if class == ClassGone {
		fs.gone = true
		p.log.Warn("feed is gone (410); not polled until its config changes", "feed", id, "error", err)
		p.updateGaugesLocked()
		return class
	}
	fs.next = p.sched.Next(now, fs.interval, o, p.rnd)
	if gauges {
		p.updateGaugesLocked()
	}

	switch {
	case success:
		var n int64
		if res != nil {
			n = res.Bytes
		}
		p.log.Debug("poll", "feed", id, "result", class, "duration", elapsed, "bytes", n, "items", items,
			"next_poll", fs.next)
	case class == ClassStore:
		p.log.Error("poll failed in the handler; validators kept", "feed", id, "result", class,
			"error", err, "failures", fs.failures, "next_poll", fs.next)
	default:
		p.log.Warn("poll failed", "feed", id, "result", class, "error", err,
			"failures", fs.failures, "next_poll", fs.next)
	}
	return class
}
