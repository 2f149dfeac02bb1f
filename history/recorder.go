package history

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Recorder collects history from the pipeline without ever holding it up:
// recording only appends to memory (dropping, and counting, what does not
// fit), and Run writes what was collected every FlushEvery, or sooner once
// a quarter of MaxPending waits, in one store round trip for all feeds. A
// failed write is counted and logged, never returned to a poll or a
// delivery.
type Recorder struct {
	store Store
	log   *slog.Logger
	every time.Duration
	max   int
	now   func() time.Time
	// kick asks Run for an early write; soon is the count that sends it.
	kick chan struct{}
	soon int

	// flushing keeps writes in the order their records were taken: a
	// later one may carry the same item's next fate.
	flushing sync.Mutex

	mu      sync.Mutex
	pending map[string]*Batch
	order   []string
	n       int // updates and polls pending
	hours   map[int64]Hour
	outbox  int

	dropped *prometheus.CounterVec
	writes  *prometheus.CounterVec
}

// RecorderOptions configure NewRecorder.
type RecorderOptions struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// FlushEvery is how often Run writes (default 1s).
	FlushEvery time.Duration
	// MaxPending bounds the records held between writes (default 50000);
	// beyond it new ones are dropped and counted. Run writes early once a
	// quarter of it waits, so only a store slower than the pipeline
	// reaches it.
	MaxPending int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewRecorder returns a recorder writing to store.
func NewRecorder(store Store, o RecorderOptions) *Recorder {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = time.Second
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 50000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Recorder{
		store: store, log: o.Logger, every: o.FlushEvery, max: o.MaxPending, now: o.Now,
		kick: make(chan struct{}, 1), soon: max(o.MaxPending/4, 1),
		pending: map[string]*Batch{}, hours: map[int64]Hour{}, outbox: -1,
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_history_dropped_total",
			Help: "History records (item fates and polls) not kept, by reason: full (too many waiting for a write), error (the write failed).",
		}, []string{"reason"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_history_writes_total",
			Help: "History writes (one store round trip each) by result (ok, error).",
		}, []string{"result"}),
	}
	for _, l := range []string{"full", "error"} {
		r.dropped.WithLabelValues(l)
	}
	for _, l := range []string{"ok", "error"} {
		r.writes.WithLabelValues(l)
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(r.dropped, r.writes)
	}
	return r
}

func (r *Recorder) batchLocked(feedID string) *Batch {
	b, ok := r.pending[feedID]
	if !ok {
		b = &Batch{Feed: feedID}
		r.pending[feedID] = b
		r.order = append(r.order, feedID)
	}
	return b
}

// room reports whether n more records fit, counting those that do not,
// and asks Run for an early write when many wait.
func (r *Recorder) roomLocked(n int) bool {
	if r.n+n > r.max {
		r.dropped.WithLabelValues("full").Add(float64(n))
		return false
	}
	r.n += n
	if r.n >= r.soon {
		select {
		case r.kick <- struct{}{}:
		default: // already asked
		}
	}
	return true
}

// Poll records a poll of a feed.
func (r *Recorder) Poll(feedID string, p Poll) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.roomLocked(1) {
		return
	}
	b := r.batchLocked(feedID)
	b.Polls = append(b.Polls, p)
}

// Items records fates of a feed's items, and counts the published,
// updated and failed ones in their hour. It takes us over (a feed's first
// updates between two writes are then not copied): the caller must not
// use it afterwards.
func (r *Recorder) Items(feedID string, us []Update) {
	if len(us) == 0 {
		return
	}
	// Clipped, so that what follows is appended to a copy, never over
	// what the caller's array holds beyond us.
	us = slices.Clip(us)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.roomLocked(len(us)) {
		return
	}
	b := r.batchLocked(feedID)
	// In the order of their times: a sender can record an item's
	// delivery before Accept records that it queued it (the Accept's
	// time is the earlier; see publish.Observer), and the store appends
	// an item's events in the order it is given them. What comes late is
	// merged with the end it belongs before, not the batch sorted again:
	// a huge feed's batch holds thousands.
	b.Items = mergeByTime(b.Items, us)
	for _, u := range us {
		k := u.Event.Kind
		if k != Published && k != Updated && k != Recovered && !k.Failed() {
			continue
		}
		start := hourOf(u.Event.Time())
		h := r.hours[start]
		h.Start = start
		switch {
		case k == Updated:
			h.Updated++
		case k.Failed():
			h.Failed++
		default:
			h.Published++
		}
		r.hours[start] = h
	}
}

// Outbox samples the outbox depth for the chart.
func (r *Recorder) Outbox(depth int) {
	r.mu.Lock()
	r.outbox = depth
	r.mu.Unlock()
}

// Run writes what was recorded every FlushEvery, and when many records
// wait, until ctx ends, then once more.
func (r *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.Flush(fctx)
			cancel()
			return nil
		case <-t.C:
			r.Flush(ctx)
		case <-r.kick:
			r.Flush(ctx)
		}
	}
}

// Flush writes what is pending now, after any write in progress. A failure
// drops it (counted, logged).
func (r *Recorder) Flush(ctx context.Context) {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	if r.n == 0 && len(r.hours) == 0 && r.outbox < 0 {
		r.mu.Unlock()
		return
	}
	batches := make([]Batch, 0, len(r.order))
	for _, id := range r.order {
		batches = append(batches, *r.pending[id])
	}
	hours, outbox, n := r.hours, r.outbox, r.n
	r.pending, r.order, r.n, r.hours, r.outbox = map[string]*Batch{}, nil, 0, map[int64]Hour{}, -1
	r.mu.Unlock()

	if err := r.store.Write(ctx, batches, hours, outbox, r.now()); err != nil {
		r.writes.WithLabelValues("error").Inc()
		r.dropped.WithLabelValues("error").Add(float64(n))
		r.log.Warn("history not written; the console misses these records", "records", n, "err", err)
		return
	}
	r.writes.WithLabelValues("ok").Inc()
}

// mergeByTime appends us to items, which are in time order, keeping that
// order (stable: of equal times, the earlier recorded first).
func mergeByTime(items, us []Update) []Update {
	byTime := func(a, b Update) int { return cmp.Compare(a.Event.At, b.Event.At) }
	if !slices.IsSortedFunc(us, byTime) {
		us = slices.Clone(us)
		slices.SortStableFunc(us, byTime)
	}
	if len(items) == 0 {
		return us // the caller's (see Items)
	}
	p := len(items)
	for p > 0 && items[p-1].Event.At > us[0].Event.At {
		p--
	}
	if p == len(items) {
		return append(items, us...)
	}
	tail := slices.Clone(items[p:])
	items = items[:p]
	for len(tail) > 0 && len(us) > 0 {
		if us[0].Event.At < tail[0].Event.At {
			items, us = append(items, us[0]), us[1:]
		} else {
			items, tail = append(items, tail[0]), tail[1:]
		}
	}
	return append(append(items, tail...), us...)
}
