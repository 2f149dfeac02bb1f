package publish

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// Defaults used when [Options] leave a field zero.
const (
	DefaultWorkers       = 8
	DefaultClaimTTL      = 5 * time.Minute
	DefaultSendTimeout   = 30 * time.Second
	DefaultShutdownGrace = 30 * time.Second
	DefaultBaseBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff    = time.Hour
	DefaultPollInterval  = time.Second
	DefaultStatsInterval = 15 * time.Second
	DefaultCategoryTTL   = time.Minute
	DefaultMaxUnresolved = 5
	DefaultHeartbeatTTL  = time.Minute
)

// ErrNotFound is returned by RetryDeadLetter for an id with no dead letter.
var ErrNotFound = errors.New("publish: no such dead letter")

// Options configure [New]. Store and API are required.
type Options struct {
	Store dedupe.Store
	API   API
	// Logger receives one info line per publish and one warn or error line
	// per failure (nil discards).
	Logger *slog.Logger
	// Registerer receives the publisher's metrics (nil registers none).
	Registerer prometheus.Registerer

	// Workers is how many items are sent at once (default 8).
	Workers int
	// MaxBacklog is how many items this process may have queued and not
	// yet delivered while Run or Drain delivers, before Accept waits for
	// deliveries to catch up (0: no limit); see backlog.
	MaxBacklog int
	// ClaimTTL is how long a worker holds an item it is sending (default
	// 5m); a worker that dies loses its claims after it.
	ClaimTTL time.Duration
	// SendTimeout bounds one item's delivery (default 30s, at most half of
	// ClaimTTL so that a claim never expires under a live send).
	SendTimeout time.Duration
	// ShutdownGrace is how long in-flight sends may finish once Run's
	// context is cancelled (default 30s).
	ShutdownGrace time.Duration
	// BaseBackoff and MaxBackoff bound the retry delay of one item
	// (defaults 100ms and 1h, growing by half per attempt, so the first retries of a transient failure
	// come within a second): BaseBackoff doubles per attempt, with jitter,
	// up to MaxBackoff. An item also waits no longer than MaxBackoff for
	// a Retry-After; the whole process honours one for up to MaxBackoff,
	// or a minute if that is longer.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// MaxUnresolved is how many attempts in a row may end the same
	// unresolved way before the item goes to the dead letters for an
	// operator to decide (default 5): a 409 answer with nothing found by
	// external_id, or a look-up that cannot tell whether the item exists
	// ([ErrUnverifiable]).
	MaxUnresolved int
	// PollInterval is how often an idle Run looks for items queued by
	// other processes (default 1s); items accepted by this process wake
	// it at once.
	PollInterval time.Duration
	// StatsInterval is how often Run refreshes the outbox gauges (default
	// 15s).
	StatsInterval time.Duration
	// CategoryTTL is the least time between two category list refreshes
	// triggered by unknown names (default 1m).
	CategoryTTL time.Duration
	// HeartbeatTTL is how long this process's heartbeat lasts unrefreshed
	// (default 1m; the worker passes publish.lease_ttl), with a store that
	// keeps heartbeats ([dedupe.Heartbeats]): a process whose heartbeat is
	// gone has its claimed items taken at once by another. SendTimeout is
	// kept to at most half of it.
	HeartbeatTTL time.Duration
	// Owner names this process in claims and leases (default host, pid and
	// a random suffix). Each claim call adds a sequence number to it, so
	// that no two claims share an owner.
	Owner string
	// Observer, when set, is told each item's fate (see Observer).
	Observer Observer
	// EpochInterval is how often WatchStore reads the store's epoch
	// marker (default 2s); see reconcile mode in the package doc.
	EpochInterval time.Duration
	// OnStoreLoss, when set, runs each time the store's epoch marker is
	// found changed or gone under a running publisher (the worker has the
	// poller fetch every feed in full again).
	OnStoreLoss func()
	// Health, when set, is the store's up/down state: Run claims nothing
	// while the store is down, an outcome that could not be recorded is
	// kept (with its claim) until the store is back rather than given up
	// on, and every store call's error is reported to it.
	Health StoreHealth
}

// StoreHealth is the store's up/down state (see Options.Health).
type StoreHealth interface {
	// Observe hears each store call's error (nil: it answered).
	Observe(err error)
	// Up reports whether the store answers.
	Up() bool
	// Wait returns once the store is up, or ctx's error.
	Wait(ctx context.Context) error
}

// FeedOptions are the per-feed settings Accept applies. They travel with
// each queued item, so a delivery uses the settings of the poll that
// queued it, in whichever process delivers it.
type FeedOptions struct {
	// InitialItems is how many of the newest items are published the first
	// time a feed is seen (0: none); the rest are recorded as seen.
	InitialItems int
	// RecreateDeleted posts an item again when its update answers 404 (it
	// was deleted on the service); otherwise it is recorded as removed and
	// left alone.
	RecreateDeleted bool
	// CreateCategories creates category names the service does not have;
	// otherwise they are dropped with a warning.
	CreateCategories bool
	// Dates are the feed's date rules, applied at send time with the
	// first-seen time (see transform.Payload.ForSend).
	Dates transform.DateRules
	// BackfillSince, when set, also queues items recorded as seen but never
	// published whose publish date is at or after it (feedworker backfill).
	BackfillSince time.Time
	// ICal is set for an iCalendar feed (see ICalOptions).
	ICal *ICalOptions
	// Reposts configure repost matching and the flood guard.
	Reposts RepostOptions
}

// Counts say what Accept did with one fetch's items.
type Counts struct {
	// New were queued for a first publish (backfilled items included).
	New int
	// Updated changed since their last accepted version, and an update
	// was queued.
	Updated int
	// Duplicate were known with the same hash, or changed but left alone
	// (recorded as seen only, or removed on the service).
	Duplicate int
	// Seen were recorded without publishing (first sight beyond
	// InitialItems).
	Seen int
	// Dropped were invalid (no external id, hash or known type, or a
	// repeated external id) and ignored; counted as outcome "failed".
	Dropped int
	// Reposts counts new items recognised as a known story, by matcher
	// (MatchURL, MatchText, MatchAcross): not posted, recorded as aliases;
	// RepostUpdates how many of them changed their story (a PUT queued).
	Reposts       RepostCounts
	RepostUpdates int
	// Held counts new items the flood guard holds for release.
	Held int
}

// Publisher decides POST, PUT or nothing for each item, and delivers the
// outbox. Its methods are safe for concurrent use; Run (or Drain) should
// run once per process.
type Publisher struct {
	store  dedupe.Store
	api    API
	log    *slog.Logger
	m      *metrics
	rm     *repostMetrics
	o      Options
	cats   *categories
	gate   gate
	wakeCh chan struct{}
	// claimSeq numbers claim calls, to make each claim's owner unique.
	claimSeq atomic.Uint64
	rec      *reconciler
	hb       heartbeat

	statsMu   sync.Mutex
	lastStats time.Time
	born      time.Time // when New made it
	// deadLetters is the dead-letter count the last Stats saw, -1 before
	// the first; lastRefusalLook when refusals.go last looked at them.
	deadLetters     int
	lastRefusalLook time.Time
	// statsPending: a refresh of the gauges is scheduled (statsChanged).
	statsPending bool
	// statsRefreshing counts the refreshes statsChanged scheduled and that
	// have not finished, so a test can tell the store is quiet.
	statsRefreshing sync.WaitGroup

	// unread sums up the answers the client could not read.
	unread unreadables
	// backlog holds Accept back while deliveries lag far behind.
	backlog *backlog
}

// New returns a publisher. It registers its metrics with o.Registerer.
func New(o Options) (*Publisher, error) {
	if o.Store == nil || o.API == nil {
		return nil, errors.New("new publisher: Store and API are required")
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	o.Workers = cmp.Or(max(o.Workers, 0), DefaultWorkers)
	o.ClaimTTL = cmp.Or(max(o.ClaimTTL, 0), DefaultClaimTTL)
	o.SendTimeout = min(cmp.Or(max(o.SendTimeout, 0), DefaultSendTimeout), o.ClaimTTL/2)
	o.HeartbeatTTL = cmp.Or(max(o.HeartbeatTTL, 0), DefaultHeartbeatTTL)
	if _, ok := o.Store.(dedupe.Heartbeats); ok {
		o.SendTimeout = min(o.SendTimeout, o.HeartbeatTTL/2)
	}
	o.ShutdownGrace = cmp.Or(max(o.ShutdownGrace, 0), DefaultShutdownGrace)
	o.BaseBackoff = cmp.Or(max(o.BaseBackoff, 0), DefaultBaseBackoff)
	o.MaxBackoff = max(cmp.Or(max(o.MaxBackoff, 0), DefaultMaxBackoff), o.BaseBackoff)
	o.PollInterval = cmp.Or(max(o.PollInterval, 0), DefaultPollInterval)
	o.StatsInterval = cmp.Or(max(o.StatsInterval, 0), DefaultStatsInterval)
	o.CategoryTTL = cmp.Or(max(o.CategoryTTL, 0), DefaultCategoryTTL)
	o.MaxUnresolved = cmp.Or(max(o.MaxUnresolved, 0), DefaultMaxUnresolved)
	o.EpochInterval = cmp.Or(max(o.EpochInterval, 0), DefaultEpochInterval)
	if o.Owner == "" {
		o.Owner = defaultOwner()
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new publisher: %w", err)
	}
	repm, err := newRepostMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new publisher: %w", err)
	}
	rm, err := newReconcileMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new publisher: %w", err)
	}
	p := &Publisher{store: o.Store, log: o.Logger, m: m, rm: repm, o: o, wakeCh: make(chan struct{}, 1), backlog: newBacklog(o.MaxBacklog), deadLetters: -1, born: time.Now()}
	p.rec = &reconciler{log: o.Logger, m: rm, onLoss: o.OnStoreLoss, done: map[string]uint64{}}
	p.rec.store, _ = o.Store.(dedupe.Reconciler)
	p.api = gated{api: o.API, g: &p.gate, max: max(o.MaxBackoff, minRetryAfterCap)}
	p.cats = &categories{p: p, sem: make(chan struct{}, 1)}
	return p, nil
}

func defaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "host"), os.Getpid(), hex.EncodeToString(b[:]))
}

func validType(t string) bool {
	switch t {
	case transform.TypeStory, transform.TypeLink, transform.TypeEvent, transform.TypeNeed:
		return true
	}
	return false
}

// Accept diffs one 200 poll's items against the store, queues new and
// changed items in the durable outbox and stores the validators. When it
// returns nil, every item is durable and the validators are stored; on an
// error nothing is published and the validators are unchanged, so the next
// poll sees the same items again. A poll with nothing new or changed costs
// one store round trip; otherwise two. A feed new to the store, or in
// reconcile mode (see the package doc), first has its unknown items looked
// up on the API: one GET per 100 of them, and up to two store round trips
// more (the epoch marker, the items found).
func (p *Publisher) Accept(ctx context.Context, feedID string, payloads []transform.Payload, v dedupe.Validators, o FeedOptions) (Counts, error) {
	waited, err := p.backlog.wait(ctx)
	if err != nil {
		return Counts{}, fmt.Errorf("accept feed %s: waiting for deliveries: %w", feedID, err)
	}
	if waited {
		p.m.backlogWait.Inc()
	}
	at := time.Now() // before the items can be claimed (see Observer)
	var c Counts
	items := make([]dedupe.Item, 0, len(payloads))
	kept := make([]*transform.Payload, 0, len(payloads))
	seen := make(map[string]bool, len(payloads))
	var dropped []Accepted
	for i := range payloads {
		pl := &payloads[i]
		why := ""
		switch {
		case pl.ExternalID == "":
			why = "no external id"
		case pl.Hash == "" || strings.ContainsAny(pl.Hash, "|\n"):
			why = "no usable hash"
		case !validType(pl.Type):
			why = fmt.Sprintf("unknown type %q", pl.Type)
		case seen[pl.ExternalID]:
			why = "external id repeated in one fetch"
		}
		if why != "" {
			c.Dropped++
			dropped = append(dropped, Accepted{Payload: pl, Fate: FateDropped, Reason: why})
			p.log.Warn("item dropped", "feed", feedID, "external_id", pl.ExternalID, "cause", why)
			continue
		}
		seen[pl.ExternalID] = true
		items = append(items, dedupe.Item{ExternalID: pl.ExternalID, Hash: pl.Hash})
		kept = append(kept, pl)
	}
	now := time.Now()
	var icalNote []byte
	icalNow := now
	if o.ICal != nil {
		if !o.ICal.Now.IsZero() {
			icalNow = o.ICal.Now
		}
		gone, note, err := p.icalMissing(ctx, feedID, kept, o.ICal, icalNow)
		if err != nil {
			return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
		}
		icalNote = note
		for i := range gone {
			items = append(items, dedupe.Item{ExternalID: gone[i].ExternalID, Hash: gone[i].Hash})
			kept = append(kept, &gone[i])
		}
	}
	backfill := !o.BackfillSince.IsZero()
	diffV := &v
	if backfill {
		// A backfill always commits (seen-only items are invisible to
		// Diff's "dirty"), and stores the validators there.
		diffV = nil
	}
	var d dedupe.Diff
	err = p.storeOp(ctx, "diff", func(ctx context.Context) (err error) {
		d, err = p.store.Diff(ctx, feedID, items, diffV, now)
		return err
	})
	if err != nil {
		return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
	}
	reconciling, strict, gen, err := p.reconcileMode(ctx, feedID, d.Known)
	if err != nil {
		return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
	}
	if !backfill && !d.Dirty() {
		if reconciling {
			p.reconciled(feedID, gen)
		}
		c.Duplicate = len(items)
		p.countItems(feedID, c)
		p.saveICalNote(ctx, feedID, icalNote)
		p.observeAccepted(feedID, at, kept, dropped, d, nil, nil, nil)
		return c, nil
	}

	act := make([]dedupe.Action, len(kept)) // 0: no change to send
	switch {
	case o.ICal != nil:
		// Occurrences: what is new is posted unless it is over or
		// cancelled; first sight is no different.
		for i, s := range d.Status {
			switch {
			case s == dedupe.StatusNew:
				act[i] = icalAction(kept[i], o.ICal, icalNow)
			case s == dedupe.StatusChanged:
				act[i] = dedupe.ActionPublish
			}
		}
	case !d.Known:
		// First sight: the newest InitialItems are published, the rest
		// recorded as seen.
		for rank, i := range newestFirst(kept) {
			act[i] = dedupe.ActionSeeOnly
			if rank < o.InitialItems {
				act[i] = dedupe.ActionPublish
			}
		}
	default:
		for i, s := range d.Status {
			if s == dedupe.StatusNew || s == dedupe.StatusChanged {
				act[i] = dedupe.ActionPublish
			}
		}
	}
	found := make([]bool, len(kept))
	if reconciling {
		// Before any POST of the feed: what the API has is recorded as
		// published, and only the rest is queued.
		if found, err = p.reconcile(ctx, feedID, kept, d, act, o, strict); err != nil {
			return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
		}
	}
	if backfill {
		for i, pl := range kept {
			if found[i] {
				continue
			}
			if !pl.PublishDate.IsZero() && !pl.PublishDate.Before(o.BackfillSince) && d.Status[i] != dedupe.StatusUnchanged {
				act[i] = dedupe.ActionBackfill
			}
		}
	}
	plan, ai, err := p.planReposts(ctx, feedID, kept, d, act, o, now)
	if err != nil {
		return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
	}
	var repostChanges []dedupe.Change
	if plan != nil {
		if repostChanges, err = p.applyReposts(feedID, kept, act, plan, o); err != nil {
			return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
		}
	}
	held, notes, err := p.floodGuard(ctx, feedID, kept, d, act, plan, o)
	if err != nil {
		return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
	}
	// Each entry's head goes into one buffer for all of them, and its
	// body (most of its bytes) to the store as it is (dedupe.Change.Tail):
	// joining the two here was 6% of what a first pass allocated.
	heads := make([]byte, 0, entryHeadsSize(kept, act, plan, o))
	var changes []dedupe.Change
	var ends []int
	for i, a := range act {
		if a == 0 {
			continue
		}
		var err error
		if heads, err = appendEntryHead(heads, entryEnvelope(kept[i], o, plan.mergeOf(i))); err != nil {
			return Counts{}, fmt.Errorf("accept feed %s: encode %s: %w", feedID, kept[i].ExternalID, err)
		}
		ends = append(ends, len(heads))
		changes = append(changes, dedupe.Change{ExternalID: kept[i].ExternalID, Hash: kept[i].Hash, Type: kept[i].Type, Action: a, Tail: kept[i].Body})
	}
	start := 0
	for i, end := range ends {
		changes[i].Data = heads[start:end:end]
		start = end
	}
	changes = append(changes, repostChanges...)
	// A store that can records the aliases and the notes with the commit:
	// on bbolt one commit and fsync fewer, on Redis a round trip and a
	// command per alias. Aliases it would refuse are put apart, as
	// before, so that they cost matching only, never the commit; the
	// notes then follow the commit.
	var aliases []dedupe.Alias
	ac, withAliases := p.store.(dedupe.AliasCommitter)
	if withAliases && plan != nil {
		aliases = aliasesOf(feedID, kept, d.Status, plan, o.Reposts)
		withAliases = dedupe.CheckAliases(aliases) == nil
	}
	var out []dedupe.Outcome
	var aliasErr, noteErr error
	err = p.storeOp(ctx, "commit", func(ctx context.Context) (err error) {
		aliasErr, noteErr = nil, nil
		if withAliases && (len(aliases) > 0 || len(notes) > 0) {
			out, err = ac.CommitAliases(ctx, feedID, changes, &v, aliases, notes, now)
			// Committed: as with saveAliases, a failure of the aliases
			// costs matching, not delivery; one of the newest date's
			// note leaves it behind, which the next poll's recorded
			// items make up for.
			if aliasErr, noteErr = afterCommit(err); aliasErr != nil || noteErr != nil {
				err = nil
			}
			return err
		}
		out, err = p.store.Commit(ctx, feedID, changes, &v, now)
		return err
	})
	if err != nil {
		return Counts{}, fmt.Errorf("accept feed %s: %w", feedID, err)
	}
	if !withAliases && len(notes) > 0 {
		// Not counted again below: storeOp counts it.
		if err := p.storeOp(ctx, "note", func(ctx context.Context) error {
			for _, n := range notes {
				if err := p.store.SetNote(ctx, feedID, n.Name, n.Data); err != nil {
					return err
				}
			}
			return nil
		}); err != nil && ctx.Err() == nil {
			p.log.Warn("storing the newest date seen failed after the commit; the next poll's recorded items stand in for it", "feed", feedID, "err", err)
		}
	}
	if aliasErr != nil && ctx.Err() == nil {
		// A store failure of its own, as when the aliases were a call
		// of their own (saveAliases): counted, and heard by the health.
		p.storeFailed("aliases", aliasErr)
		p.log.Warn("storing repost aliases failed; the next poll with news stores them", "feed", feedID, "err", aliasErr)
	}
	if noteErr != nil && ctx.Err() == nil {
		p.storeFailed("note", noteErr)
		p.log.Warn("storing the newest date seen failed after the commit; the next poll's recorded items stand in for it", "feed", feedID, "err", noteErr)
	}
	p.saveICalNote(ctx, feedID, icalNote)
	if plan != nil && !withAliases {
		p.saveAliases(ctx, ai, feedID, kept, d.Status, plan, o.Reposts, now)
	}
	if reconciling {
		p.reconciled(feedID, gen)
	}
	c.Duplicate = len(items) - (len(changes) - len(repostChanges))
	for _, oc := range out[:len(out)-len(repostChanges)] {
		switch oc {
		case dedupe.OutcomeNew, dedupe.OutcomeBackfilled:
			c.New++
		case dedupe.OutcomeUpdated:
			c.Updated++
		case dedupe.OutcomeSeen:
			c.Seen++
		default:
			c.Duplicate++
		}
	}
	if plan != nil {
		c.Reposts = plan.counts()
		for by, n := range map[string]int{MatchURL: c.Reposts.URL, MatchText: c.Reposts.Text, MatchAcross: c.Reposts.AcrossFeeds} {
			if n > 0 {
				p.rm.blocked.WithLabelValues(by).Add(float64(n))
			}
		}
		for i, m := range plan.matches {
			switch {
			case d.Status[i] != dedupe.StatusNew:
			case m.merge != nil:
				c.New-- // a merge job, not a post
			default:
				c.Seen--
			}
		}
		for _, oc := range out[len(out)-len(repostChanges):] {
			if oc == dedupe.OutcomeUpdated {
				c.RepostUpdates++
			}
		}
	}
	c.Held = held
	c.Seen -= held
	p.countItems(feedID, c)
	p.observeAccepted(feedID, at, kept, dropped, d, act, out[:len(out)-len(repostChanges)], plan)
	if n := c.New + c.Updated + c.RepostUpdates + plan.merges(); n > 0 {
		p.backlog.queued(n)
		p.wake()
		p.statsChanged()
	}
	return c, nil
}

// encode is what the outbox keeps for one item.
func (p *Publisher) encode(pl *transform.Payload, o FeedOptions) ([]byte, error) {
	return p.encodeMerge(pl, o, nil)
}

// encodeMerge is encode for an item that may be a merge job (merge.go).
func (p *Publisher) encodeMerge(pl *transform.Payload, o FeedOptions, m *mergeInto) ([]byte, error) {
	data, err := encodeEnvelope(entryEnvelope(pl, o, m))
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", pl.ExternalID, err)
	}
	return data, nil
}

// entryEnvelope is what the outbox keeps for pl.
func entryEnvelope(pl *transform.Payload, o FeedOptions, m *mergeInto) envelope {
	return envelope{Payload: *pl, RecreateDeleted: o.RecreateDeleted, CreateCategories: o.CreateCategories, Dates: o.Dates, MergeInto: m}
}

// entryHeadsSize estimates the bytes of the heads of the entries act
// queues (see headSize), for one buffer of them all.
func entryHeadsSize(kept []*transform.Payload, act []dedupe.Action, plan *repostPlan, o FeedOptions) int {
	n := 0
	for i, a := range act {
		if a != 0 {
			env := entryEnvelope(kept[i], o, plan.mergeOf(i))
			n += headSize(&env)
		}
	}
	return n
}

// newestFirst returns the indexes of payloads, newest publish date first.
// Items without a date rank after dated ones, in feed order (feeds list
// their newest items first).
func newestFirst(pl []*transform.Payload) []int {
	idx := make([]int, len(pl))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ta, tb := pl[a].PublishDate, pl[b].PublishDate
		switch {
		case ta.IsZero() && tb.IsZero():
			return 0
		case ta.IsZero():
			return 1
		case tb.IsZero():
			return -1
		}
		return tb.Compare(ta)
	})
	return idx
}

// Backfill queues the items of payloads (a fresh fetch of the feed) that
// were recorded as seen but never published and were published at or after
// since. The feed's validators are not touched. It is Accept with
// o.BackfillSince set, for `feedworker backfill --feed ID --since DATE`.
func (p *Publisher) Backfill(ctx context.Context, feedID string, payloads []transform.Payload, since time.Time, o FeedOptions) (Counts, error) {
	if since.IsZero() {
		return Counts{}, errors.New("backfill: since must be set")
	}
	v, err := p.Validators(ctx, feedID)
	if err != nil {
		return Counts{}, fmt.Errorf("backfill feed %s: %w", feedID, err)
	}
	o.BackfillSince = since
	return p.Accept(ctx, feedID, payloads, v, o)
}

// Validators returns the validators stored for a feed by the last accepted
// poll (zero when none), for the poller's next conditional GET.
func (p *Publisher) Validators(ctx context.Context, feedID string) (dedupe.Validators, error) {
	var v dedupe.Validators
	err := p.storeOp(ctx, "validators", func(ctx context.Context) (err error) {
		v, _, err = p.store.Validators(ctx, feedID)
		return err
	})
	return v, err
}

// ValidatorsAll returns the stored validators of the feeds that have
// some, in one store round trip when the store can (a pass over every
// feed, as feedworker once makes, would otherwise pay one per feed).
func (p *Publisher) ValidatorsAll(ctx context.Context, feedIDs []string) (map[string]dedupe.Validators, error) {
	out := make(map[string]dedupe.Validators, len(feedIDs))
	vb, ok := p.store.(dedupe.ValidatorsBatcher)
	if !ok {
		for _, id := range feedIDs {
			v, err := p.Validators(ctx, id)
			if err != nil {
				return nil, err
			}
			out[id] = v
		}
		return out, nil
	}
	err := p.storeOp(ctx, "validators", func(ctx context.Context) error {
		vs, found, err := vb.ValidatorsMany(ctx, feedIDs)
		if err != nil {
			return err
		}
		for i, id := range feedIDs {
			if found[i] {
				out[id] = vs[i]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CountItems adds n items of a feed to feedworker_items_total under an
// outcome the publisher does not see (the worker's filtered and failed),
// so that the counter has one definition and one registration.
func (p *Publisher) CountItems(feedID, outcome string, n int) {
	if n > 0 {
		p.m.items.WithLabelValues(feedID, outcome).Add(float64(n))
	}
}

func (p *Publisher) countItems(feedID string, c Counts) {
	for outcome, n := range map[string]int{"new": c.New, "updated": c.Updated, "duplicate": c.Duplicate, "seen": c.Seen, "failed": c.Dropped} {
		if n > 0 {
			p.m.items.WithLabelValues(feedID, outcome).Add(float64(n))
		}
	}
}

// wake tells an idle Run that items are due.
func (p *Publisher) wake() {
	select {
	case p.wakeCh <- struct{}{}:
	default:
	}
}

// storeOp runs one store call, timing it and counting its errors.
func (p *Publisher) storeOp(ctx context.Context, op string, fn func(context.Context) error) error {
	start := time.Now()
	err := fn(ctx)
	if ctx.Err() != nil {
		p.m.storeDur.WithLabelValues(op).Observe(time.Since(start).Seconds())
		return err
	}
	p.storeDone(op, start, err)
	return err
}

// storeDone counts a store call begun at start that ended with err (not
// its caller's giving up): its duration, a failure, and the store's health.
func (p *Publisher) storeDone(op string, start time.Time, err error) {
	p.m.storeDur.WithLabelValues(op).Observe(time.Since(start).Seconds())
	p.storeFailed(op, err)
}

// afterCommit picks out of CommitAliases's error what failed after its
// commit went through: the aliases (ErrAliasesNotStored) and the notes
// (ErrNotesNotStored), each its own part of the error (errors.Join) when
// both did. Both are nil when the commit itself failed (or nothing did).
func afterCommit(err error) (aliasErr, noteErr error) {
	a, n := errors.Is(err, dedupe.ErrAliasesNotStored), errors.Is(err, dedupe.ErrNotesNotStored)
	switch {
	case a && n:
		aliasErr, noteErr = err, err
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				switch a, n := errors.Is(e, dedupe.ErrAliasesNotStored), errors.Is(e, dedupe.ErrNotesNotStored); {
				case a && !n:
					aliasErr = e
				case n && !a:
					noteErr = e
				}
			}
		}
	case a:
		aliasErr = err
	case n:
		noteErr = err
	}
	return aliasErr, noteErr
}

// storeFailed counts err, when not nil, as a failure of op, and tells the
// store's health (nil: the store answered).
func (p *Publisher) storeFailed(op string, err error) {
	if err != nil {
		p.m.storeErrs.WithLabelValues(op).Inc()
	}
	if p.o.Health != nil {
		p.o.Health.Observe(err)
	}
}
