// Package dedupe is where "seen, published as content N with hash H" lives:
// the per-feed memory of items, the durable outbox of items still to be
// delivered, dead letters, fetch validators, claims and feed leases.
//
// Two implementations share one contract (and one test suite): [Redis], the
// product's store, shared by every replica, and [Bolt], an embedded on-disk
// store (go.etcd.io/bbolt) for a single worker without Redis. Every method
// that changes state does so atomically: a Lua script on Redis, one
// transaction on bbolt; Diff and Commit of a fetch too big for one step
// (more than 2,000 items or 4 MiB) work in steps that are each atomic,
// with the context checked between them (see [Store.Commit]). Publish
// logic lives in package publish; this package only keeps state and applies the state transitions described below.
//
// # Items and their life
//
// An item is named by its feed id and external id ([Key]). Its [Record]
// holds the hash last accepted from the feed, the hash and content id the
// service has, its content type, when it was first and last seen, when it was
// last published, a pending mark and a [State]:
//
//   - active: published, or queued to be;
//   - seen only: recorded without publishing (older items on a feed's first
//     sight); a hash change leaves it alone; a backfill publishes it;
//   - removed: an update answered 404 and the feed does not recreate deleted
//     items; it is left alone for good, even when its hash changes, because
//     someone deleted it on the service on purpose;
//   - dead: its last delivery failed permanently; a hash change (the source
//     may have fixed what the API rejected) or a retry queues it again.
//
// The pending mark is set, atomically with the claim, before an item without
// a content id is POSTed, and cleared when the outcome is known. Finding it
// set on a later claim means a POST may have reached the service: the
// publisher then looks the item up by external id before posting again. A
// claim keeps a mark that is already set (with its hash), since the earliest
// POST that may have landed is the one a look-up must account for.
//
// # Claims
//
// A claim is held by an owner string for a TTL. Only the holder changes an
// item's delivery state: [Store.RenewClaim], the check right before a send,
// extends the claim only for its holder, and [Store.Settle] from anyone else
// records at most the content id the API gave (see Settle). An owner that
// may claim the same item twice (after its first claim lapsed) must use a
// distinct owner string per claim, or it cannot tell the lapsed claim from
// the new one: package publish adds a sequence number to its process name
// for every claim call. A claim call repeated with the same owner string
// (its answer was lost to a timeout) takes again what the first took, so
// a lost answer never leaves items claimed by nobody who knows it.
//
// # Bounded state
//
// Each 200 poll refreshes the last-seen time of every item in the fetch;
// items whose last-seen time is older than the retention (default 90 days)
// are deleted by the same call, at most a bounded number per call. An item
// still present in its feed is refreshed by every 200 poll and so is never
// forgotten; an item with undelivered work (queued or dead) is kept too.
// Nothing expires by wall-clock TTL alone, because a feed answering 304 for
// months still holds its items. State of a feed removed from the
// configuration is not deleted automatically.
//
// # Redis data model
//
// The store runs on a single server, a Sentinel set or a Redis Cluster
// (any redis.UniversalClient). Every key starts with the configured prefix
// P (default "feedworker:"), so several deployments can share one Redis.
// F is a feed id, E an external id, M an item member "F/E" (feed ids must
// not contain "/").
//
// Feeds are spread over partitions (default 16, [RedisOptions.Partitions]):
// feed F belongs to partition N = FNV-1a(F) mod partitions, and every key
// of F, of its items' outbox entries, dead letters and claims, and of its
// lease starts with P{T}, where T is partition N's hash tag: "p:N", or
// "p:N:k" with the smallest k that puts the tag's slot in the N-th of
// partitions equal ranges of the 16384 Cluster slots (so the partitions
// spread over the masters as evenly as the slots do). On a Cluster every
// key of a partition is in one slot, and every script below touches the
// keys of one partition only: no CROSSSLOT, ever.
//
//	P{T}f:F:seen     sorted set  E -> last seen (unix ms); the feed's seen
//	                             set, and the index the retention sweep
//	                             walks
//	P{T}f:F:rec      hash        E -> record "1|hash|published hash|
//	                             content id|type|first seen ms|last
//	                             published ms|pending hash|state"
//	                             (state "", s, r or d)
//	P{T}f:F:val      hash        etag, lm (Last-Modified), at (last
//	                             accepted 200 poll, unix ms): the fetch
//	                             validators; fence: the feed lease's
//	                             fencing token; fs: a first sight
//	                             cut short between Commit steps
//	P{T}f:F:lease    string      owner of the feed's lease, SET NX PX
//	                             lease TTL ([FeedLeaser])
//	P{T}q:due        sorted set  M -> next attempt (unix ms): the
//	                             partition's outbox
//	P{T}q:dead       sorted set  M -> when it was dead-lettered (unix ms)
//	P{T}q:data       hash        M -> the payload to deliver (opaque bytes,
//	                             owned by package publish), for queued and
//	                             dead items
//	P{T}q:meta       hash        M -> "attempts|enqueued ms|hash|last
//	                             status|last error or dead-letter reason"
//	P{T}q:run        hash        M -> "run|length": the latest attempts
//	                             that failed the same way
//	                             (Settlement.Run); absent when the last
//	                             attempt set none
//	P{T}claim:M      string      owner ("process#n"), SET NX PX claim
//	                             TTL: one worker sends an item at a
//	                             time; a dead worker's claim is taken
//	                             once its heartbeat is gone, else it
//	                             expires
//	P{T'}lease:NAME  string      other named leases ("category:<name>"
//	                             while publish creates a category), in
//	                             the partition NAME hashes to
//	Playout          string      "2|partitions": the layout the keys are
//	                             in ([Redis.CheckLayout])
//	P{T}epoch        string      partition T's part of the store's epoch
//	                             marker (see [Reconciler]), written once,
//	                             when missing; losing any node of a
//	                             Cluster changes the epoch
//	Phb:PROC         string      a process's heartbeat, PX
//	                             publish.lease_ttl ([Heartbeats])
//	Powners          sorted set  PROC -> last heartbeat (ms): the
//	                             processes whose claims may be taken
//	Papi:rate        string      the shared API request budget (GCRA,
//	                             api.shared_rate_limit, [RateBudget])
//
// Scripts and the keys they touch (all in one partition T):
//
//	diff             f:F:seen, f:F:rec, f:F:val, q:data
//	commit           f:F:seen, f:F:rec, f:F:val, q:due, q:dead, q:data,
//	                 q:meta, q:run
//	claim            q:due, q:data, q:meta, q:run, and per claimed item
//	                 claim:M and f:F:rec (F of the item, in T); the
//	                 processes whose heartbeat is gone come as
//	                 arguments, read before with plain EXISTS
//	settle / renew   q:due, q:dead, q:data, q:meta, q:run, claim:M,
//	                 f:F:rec
//	retry dead       q:due, q:dead, q:meta, q:run, f:F:rec per item
//	feed leases      f:F:lease and f:F:val of each feed (one script per
//	                 partition; a batch is a pipeline of them)
//	named leases     lease:NAME (one script per partition)
//	epoch            epoch (one script per partition, in one pipeline)
//
// The claim, settle and retry scripts build the claim and record keys
// from the partition's tag (passed as an argument) rather than declaring
// them, since which items they reach is only known inside the script;
// they are always in the declared keys' slot. [Store.Claim] takes the
// partitions in turn, starting one further each call from a random
// partition per process: one pipeline runs the claim script on the first
// and reads the earliest entry of every other, then the script runs on the
// others with due entries until the batch is full. [Store.Stats],
// [Store.DeadLetters] and [Store.RetryDeadLetters] visit every partition
// in one pipeline (a ClusterClient splits it per node).
//
// Round trips: [Store.Diff] is one script for a fetch of up to 2,000
// items (look up every item, refresh last-seen times, sweep, and when
// nothing is new or changed store the validators), so a poll with nothing
// new costs one round trip.
// [Store.Commit] is one more script when something is new or changed.
// [Store.Claim] is one pipeline while the first partition fills the batch
// or nothing is due, plus one script per further partition it takes from;
// [Store.RenewClaim] (compare-and-pexpire, and the record) and
// [Store.Settle] are one run of the settle script each. The batch
// interfaces do many in one round trip: [ClaimBatcher] the renewals and
// outcomes of deliveries that reach the store together ([SettleBatcher]
// outcomes only), [FeedLeaser] and [LeaseBatcher] the leases of every feed
// of a pass (and their renewal), [ValidatorsBatcher] their validators.
//
// The outbox is a sorted set per partition and the claims are keys taken
// by a script, not Redis Streams with consumer groups: an entry must be
// due at a time of its own (backoff, Retry-After, a release to a later
// time), replaced in place when a newer hash is accepted (one entry per
// item), and claimed atomically with the pending mark in its record.
// XREADGROUP delivers in append order with no due time, XAUTOCLAIM
// re-delivers by idle time only, and neither can update the record in the
// same step, so a stream would still need the sorted set and the scripts
// beside it.
//
// The layout before partitions (keys "P f:F:..." and one global outbox
// "P q:...") is moved to this one by [Redis.CheckLayout] at start, once no
// worker of the older version holds a lease or a claim.
//
// Times that order the outbox (due times) come from the caller's clock;
// claim and lease TTLs run on the store's clock (the Redis server's).
package dedupe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults used when options leave a field zero.
const (
	DefaultPrefix     = "feedworker:"
	DefaultRetention  = 90 * 24 * time.Hour
	DefaultSweepLimit = 256
)

// ErrInvalid reports an argument the store cannot keep, such as a feed id
// containing "/" or an empty external id.
var ErrInvalid = errors.New("dedupe: invalid argument")

// Store keeps items, the outbox, dead letters, validators and leases. All
// methods are safe for concurrent use; each state change is atomic.
type Store interface {
	// Diff looks up every item of one fetch, refreshes their last-seen
	// times and expires items that left the feed longer than the retention
	// ago. When v is not nil and no item is new or changed, it also stores
	// v, all in one step (one round trip on Redis) for up to 2,000 items;
	// a bigger fetch takes several steps, the validators stored by the
	// last. A Diff cut short (its context ended) stores no validators.
	Diff(ctx context.Context, feedID string, items []Item, v *Validators, now time.Time) (Diff, error)
	// Commit applies the changes of one fetch and, when v is not nil,
	// stores v. Each change is decided again against the stored state, so
	// a Commit is correct even if the state moved since Diff, and so a
	// Commit done again records only what is not recorded yet. The
	// outcomes are in the changes' order.
	//
	// Up to 2,000 changes are one atomic step: either all is durable or
	// nothing is. More are cut into such steps, the context checked before
	// each; every item is recorded in the same step as its outbox entry,
	// and v is stored by the last step only. A Commit cut short (an error,
	// or its context ended) thus leaves the feed's validators as they were,
	// so the feed is fetched again, and a first sight still a first sight
	// (Diff's Known stays false until a Commit completes): the redo queues
	// what is left, and nothing twice.
	Commit(ctx context.Context, feedID string, changes []Change, v *Validators, now time.Time) ([]Outcome, error)
	// Validators returns the stored validators of a feed; ok is false when
	// no 200 poll of the feed was accepted yet.
	Validators(ctx context.Context, feedID string) (v Validators, ok bool, err error)
	// Record returns one item's record; ok is false when it is unknown.
	Record(ctx context.Context, k Key) (r Record, ok bool, err error)

	// Claim claims up to max due outbox entries (next attempt <= now) for
	// owner for ttl, and sets the pending mark of every claimed item that
	// has no content id yet. Each Claimed carries the record as it was
	// before the claim. When nothing was claimed, next is the earliest next
	// attempt of an unclaimed entry (zero if none), so the caller knows how
	// long to sleep.
	Claim(ctx context.Context, owner string, max int, ttl time.Duration, now time.Time) (claimed []Claimed, next time.Time, err error)
	// RenewClaim is the check before a send: if owner still holds its
	// claim on k, it extends the claim to ttl from now and reports held;
	// either way it returns the item's record as it is now (see
	// [Renewal]). A claim that is not held must not be acted on: its
	// item belongs to whoever claims it next.
	RenewClaim(ctx context.Context, k Key, owner string, ttl time.Duration) (Renewal, error)
	// Settle records the outcome of a claimed item and releases owner's
	// claim. held reports whether owner still held the claim. An outcome
	// from an owner that no longer holds the claim (it expired, and
	// another owner may hold it now) cannot clear or overwrite anything:
	// only a Delivered outcome leaves a trace, the content id, and only
	// on a record that has none, because the API did create it. The
	// pending mark, the state, the outbox entry and any new claim stay as
	// the current holder left them.
	Settle(ctx context.Context, k Key, owner string, s Settlement, now time.Time) (held bool, err error)

	// DeadLetters lists the dead letters, oldest first.
	DeadLetters(ctx context.Context) ([]DeadLetter, error)
	// RetryDeadLetter queues one dead letter (by [Key.String]) again, due
	// now, with its attempt count reset; ok is false if there is none.
	RetryDeadLetter(ctx context.Context, id string, now time.Time) (ok bool, err error)
	// RetryDeadLetters queues every dead letter again and returns how many.
	RetryDeadLetters(ctx context.Context, now time.Time) (int, error)
	// Stats counts the outbox and the dead letters.
	Stats(ctx context.Context, now time.Time) (Stats, error)

	// AcquireLease takes the named lease for owner for ttl, or extends it
	// if owner already holds it; ok is false when another owner holds it.
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (ok bool, err error)
	// RenewLease extends the lease only if owner still holds it.
	RenewLease(ctx context.Context, name, owner string, ttl time.Duration) (ok bool, err error)
	// ReleaseLease gives the lease up only if owner still holds it.
	ReleaseLease(ctx context.Context, name, owner string) error

	Notes

	// Close releases the store's resources.
	Close() error
}

// Key names an item for life.
type Key struct {
	FeedID     string
	ExternalID string
}

// String is the item's id in the outbox and in dead-letter listings,
// "feed/external id"; [ParseKey] reverses it.
func (k Key) String() string { return k.FeedID + "/" + k.ExternalID }

// ParseKey splits an id made by [Key.String].
func ParseKey(id string) (Key, error) {
	feed, ext, ok := strings.Cut(id, "/")
	k := Key{FeedID: feed, ExternalID: ext}
	if !ok {
		return Key{}, fmt.Errorf("parse item id %q: %w: want feed/external_id", id, ErrInvalid)
	}
	return k, k.check()
}

func (k Key) check() error {
	if err := checkFeedID(k.FeedID); err != nil {
		return err
	}
	if k.ExternalID == "" {
		return fmt.Errorf("item of feed %q: %w: empty external id", k.FeedID, ErrInvalid)
	}
	return nil
}

func checkFeedID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("feed id %q: %w: must be non-empty without \"/\"", id, ErrInvalid)
	}
	return nil
}

// checkToken guards fields of the "|"-separated Redis record.
func checkToken(what, s string) error {
	if strings.ContainsAny(s, "|\n") {
		return fmt.Errorf("%s %q: %w: must not contain \"|\" or a newline", what, s, ErrInvalid)
	}
	return nil
}

// Validators are a feed's HTTP validators for the next conditional GET.
type Validators struct {
	ETag         string
	LastModified string
	// Fence, when not zero, is the fencing token of the feed lease under
	// which the caller polled ([FeedLeaser]): Diff and Commit then store
	// nothing and fail with [ErrFenced] when the feed's token is another.
	// Stores leave it zero in what they return.
	Fence int64
}

// Item is one item of a fetch as Diff sees it.
type Item struct {
	ExternalID string
	Hash       string
}

// Status is Diff's verdict on one item.
type Status byte

// Diff verdicts.
const (
	StatusNew       Status = 'n' // no record
	StatusChanged   Status = 'c' // the hash differs from the last accepted one
	StatusUnchanged Status = 'u' // same hash
	StatusSkipped   Status = 's' // same hash, recorded as seen only (never published)
)

// Diff is the result of [Store.Diff].
type Diff struct {
	// Status holds one verdict per item, in the items' order.
	Status []Status
	// Known is false on a feed's first sight: no record and no accepted
	// poll before this call.
	Known bool
	// ValidatorsStored is true when Diff stored the validators itself
	// (nothing new or changed).
	ValidatorsStored bool
	// Expired counts records deleted by the retention sweep.
	Expired int
}

// Dirty reports whether any item is new or changed.
func (d Diff) Dirty() bool {
	for _, s := range d.Status {
		if s == StatusNew || s == StatusChanged {
			return true
		}
	}
	return false
}

// Action tells Commit what to do with a new item.
type Action byte

// Commit actions.
const (
	// ActionPublish queues a new item and, like every action, queues an
	// update when an active or dead item's hash changed.
	ActionPublish Action = 'p'
	// ActionSeeOnly records a new item as seen without publishing it.
	ActionSeeOnly Action = 's'
	// ActionBackfill is ActionPublish that also queues an item recorded as
	// seen only.
	ActionBackfill Action = 'b'
)

// Change is one new or changed item handed to Commit.
type Change struct {
	ExternalID string
	Hash       string
	Type       string
	Action     Action
	// Data is what the outbox keeps for delivery; opaque to the store.
	Data []byte
	// Tail, when set, is the rest of the entry: the outbox keeps Data
	// followed by Tail, and a claim gives them back as one. A large part
	// the caller holds as a string (an item's body) goes here, so that
	// nobody copies it next to Data first: Redis is sent both, and bbolt
	// joins them in memory it reuses before it compresses them.
	Tail string
}

// Outcome is what Commit did with one change.
type Outcome byte

// Commit outcomes.
const (
	OutcomeNew        Outcome = 'n' // recorded and queued
	OutcomeUpdated    Outcome = 'c' // hash changed; an update is queued
	OutcomeUnchanged  Outcome = 'u' // nothing to deliver (same hash, or seen-only or removed item)
	OutcomeSeen       Outcome = 's' // recorded as seen only
	OutcomeBackfilled Outcome = 'b' // a seen-only item queued by a backfill
)

// State is an item's standing; see the package doc.
type State byte

// Item states.
const (
	StateActive   State = 0
	StateSeenOnly State = 's'
	StateRemoved  State = 'r'
	StateDead     State = 'd'
)

// Record is what the store knows of one item.
type Record struct {
	// Hash is the hash last accepted from the feed; PublishedHash the one
	// the service has (empty before the first delivery).
	Hash          string
	PublishedHash string
	ContentID     int64
	// Type is the content type of ContentID (or, before delivery, of the
	// item).
	Type          string
	FirstSeen     time.Time
	LastSeen      time.Time
	LastPublished time.Time
	// PendingHash is the hash of a POST that may have reached the service
	// (see the package doc); empty when none.
	PendingHash string
	State       State
}

// Claimed is one outbox entry claimed for delivery.
type Claimed struct {
	Key Key
	// Data is the entry's Data as committed. A string: Redis answers
	// strings, and a delivery reads its fields out of it without a copy.
	Data     string
	Hash     string
	Attempts int
	Enqueued time.Time
	// Record is the item's record as it was before the claim; its
	// PendingHash set means an earlier POST may have reached the service.
	Record Record
	// Run and RunLength describe how the latest attempts failed: RunLength
	// attempts in a row ended with the same [Settlement].Run. Both are
	// zero when the last attempt set no Run.
	Run       string
	RunLength int
}

// Renewal is what [Store.RenewClaim] found.
type Renewal struct {
	// Held is true when the caller still held its claim, now extended.
	Held bool
	// Record is the item's record now, and Known whether there is one.
	// While a claim is held nobody else sets the pending mark, but an
	// owner whose claim lapsed may have recorded the content id it got.
	Record Record
	Known  bool
}

// SettleKind says how a claimed delivery ended.
type SettleKind int

// Settlement kinds.
const (
	// Delivered: the service has ContentID with Hash. The outbox entry is
	// removed, unless a newer hash was accepted meanwhile: then it is due
	// again now, as an update.
	Delivered SettleKind = iota + 1
	// Retry: try again at Next; the attempt count grows.
	Retry
	// Dead: a permanent failure; the item joins the dead letters with
	// Status and Reason.
	Dead
	// Removed: the content was deleted on the service and is left alone.
	Removed
	// Release: give the claim back without sending (a shutdown, or a wait
	// that would outlast the claim). The attempt count is unchanged; the
	// entry is due again at Next, or where it was when Next is zero. The
	// pending mark the claim set is cleared unless Ambiguous: nothing was
	// sent under this claim.
	Release
	// Aliased: the item is another item's story (package publish's match
	// across feeds, settled once that item's content exists). The outbox
	// entry is removed and the item recorded as seen only, without a
	// content id of its own: its later changes are never sent.
	Aliased
)

// String names the kind, as logs show it.
func (k SettleKind) String() string {
	switch k {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Dead:
		return "dead"
	case Removed:
		return "removed"
	case Release:
		return "release"
	case Aliased:
		return "aliased"
	}
	return fmt.Sprintf("SettleKind(%d)", int(k))
}

// Settlement is the outcome handed to [Store.Settle].
type Settlement struct {
	Kind SettleKind
	// Delivered: the content id, its type and the hash it now has.
	ContentID int64
	Type      string
	Hash      string
	// Retry: when to try again; Release: when the entry is due again
	// (zero: unchanged).
	Next time.Time
	// Retry and Dead: the API's status (0 for a network error) and why.
	Status int
	Reason string
	// Ambiguous keeps the pending mark (Retry, Dead, Release): the POST
	// may have reached the service. Otherwise the mark is cleared.
	Ambiguous bool
	// ForgetContent drops the content id (Retry), so the next attempt
	// creates the item again: it was deleted on the service.
	ForgetContent bool
	// Run names how a Retry or Dead attempt failed, for failures the
	// caller bounds by how often they happen in a row (a 409 with nothing
	// found, say): the store counts the attempts in a row that end with
	// the same Run and hands the count to the next claim
	// ([Claimed].RunLength). An empty Run, and any Delivered outcome, end
	// the run. It must not contain "|" or a newline.
	Run string
}

// DeadLetter is an item whose delivery failed permanently.
type DeadLetter struct {
	// ID is the item's [Key.String], what RetryDeadLetter takes.
	ID       string
	Key      Key
	Data     []byte
	Hash     string
	Attempts int
	Status   int
	Reason   string
	At       time.Time
	Enqueued time.Time
}

// Stats counts outbox entries and dead letters.
type Stats struct {
	// Outbox is every queued entry; Due those whose next attempt has come.
	Outbox      int
	Due         int
	DeadLetters int
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func checkItems(feedID string, items []Item) error {
	if err := checkFeedID(feedID); err != nil {
		return err
	}
	for _, it := range items {
		if err := (Key{feedID, it.ExternalID}).check(); err != nil {
			return err
		}
		if err := checkToken("hash", it.Hash); err != nil {
			return err
		}
	}
	return nil
}

func checkChanges(feedID string, changes []Change) error {
	if err := checkFeedID(feedID); err != nil {
		return err
	}
	for _, c := range changes {
		if err := (Key{feedID, c.ExternalID}).check(); err != nil {
			return err
		}
		if err := checkToken("hash", c.Hash); err != nil {
			return err
		}
		if err := checkToken("type", c.Type); err != nil {
			return err
		}
		switch c.Action {
		case ActionPublish, ActionSeeOnly, ActionBackfill:
		default:
			return fmt.Errorf("change %q: %w: unknown action %q", c.ExternalID, ErrInvalid, c.Action)
		}
	}
	return nil
}
