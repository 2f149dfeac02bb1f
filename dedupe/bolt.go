package dedupe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// BoltOptions configure [OpenBolt]. Zero fields take the defaults.
type BoltOptions struct {
	// Retention and SweepLimit are as in [RedisOptions].
	Retention  time.Duration
	SweepLimit int
	// LockTimeout bounds the wait for the database file's lock, held by
	// another process using the same file (default 5s).
	LockTimeout time.Duration
	// ReclaimDelay is how long an item a previous process was sending
	// waits before it is offered again (default 30s, the publisher's send
	// timeout), so that a POST cut by that process's death can land first.
	ReclaimDelay time.Duration
	// CallTimeout bounds how long a caller waits for one read (default:
	// no bound; the worker passes redis.timeout); past it the read returns
	// [ErrStoreTimeout]. A write waits while its context lasts: a large
	// commit may rightly take longer, and one given up on runs on and may
	// still commit, like a Redis script whose reply was lost (callers
	// treat such an error as "maybe applied").
	CallTimeout time.Duration
}

// ErrStoreTimeout reports a store call that did not finish within its
// bound (BoltOptions.CallTimeout).
var ErrStoreTimeout = errors.New("store call timed out")

// Bolt is the [Store] in an embedded bbolt file, for one worker process
// without Redis. bbolt locks the file, so one process at a time uses it;
// leases are kept anyway so the same code runs on both stores.
//
// Layout: bucket "feeds" holds one bucket per feed with "rec" (external id
// -> record, same encoding as on Redis), "seen" (external id -> last seen
// ms), "idx" (last seen ms + external id, the sweep's order) and "val"
// (etag, lm, at). Top-level buckets "due" (due ms + member) with "duex"
// (member -> due ms), "dead" (member -> ms), "data" (the payload, in
// bolt_payload.go's codec), "meta", "runs", "claims" and "leases" mirror
// the Redis keys. Every method is one transaction.
type Bolt struct {
	db    *bolt.DB
	group *groupCommitter
	// aliases are the aliases across feeds not yet in their bucket
	// (bolt_aliaslog.go).
	aliases       *aliasOverlay
	mergeAt       int
	mergeLogBytes int
	closeOnce     sync.Once
	closeErr      error
	retention     time.Duration
	sweepLimit    int
	// created: OpenBolt made the file (CreatedFile).
	created bool
	// callTimeout bounds each call (BoltOptions.CallTimeout).
	callTimeout time.Duration
	// afterStep, set by tests only, runs after each step of a Diff or
	// Commit cut into several.
	afterStep stepHook
	// afterAliasRead, set by tests only, runs after a reservation read the
	// bucket, before it takes the overlay's lock again.
	afterAliasRead func()
	// beforeMergeWait, set by tests only, runs when Close is about to wait
	// for a merge under way, with the overlay's lock held.
	beforeMergeWait func()
}

var _ Store = (*Bolt)(nil)

// ErrLocked is returned by [OpenBolt] when another process holds the file
// for longer than the lock timeout.
var ErrLocked = errors.New("the file is locked by another process")

var (
	bFeeds = []byte("feeds")
	bRec   = []byte("rec")
	bSeen  = []byte("seen")
	bIdx   = []byte("idx")
	bVal   = []byte("val")
	// bFirstSight, in a feed's val bucket: its first sight was cut short
	// (steps.go).
	bFirstSight = []byte("fs")
	bDue        = []byte("due")
	bDueX       = []byte("duex")
	bDead       = []byte("dead")
	bData       = []byte("data")
	bMeta       = []byte("meta")
	bRuns       = []byte("runs")
	bClaims     = []byte("claims")
	bLeases     = []byte("leases")
)

// initialMmapSize is the address space bbolt maps at open. bbolt maps the
// file and, as the file grows, unmaps and maps it again, doubling up to
// 1 GiB; each remap waits for every read transaction to end and cost the
// quickstart's 100,000-item first sight 1.4 of 82 CPU s
// (bbolt.(*DB).mmap). Mapping 1 GiB from the start costs address space
// only: pages count in memory only once touched. Not on Windows, where
// bbolt grows the file itself to the mapped size, nor on 32-bit builds.
func initialMmapSize() int {
	if runtime.GOOS == "windows" || strconv.IntSize < 64 {
		return 0
	}
	return 1 << 30
}

// OpenBolt opens (creating if needed) the store file at path. Claims left
// by an earlier process are dropped: the file lock proves that process is
// gone, and the pending marks it left make the next attempt look the items
// up before posting.
func OpenBolt(path string, o BoltOptions) (*Bolt, error) {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.SweepLimit <= 0 {
		o.SweepLimit = DefaultSweepLimit
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 5 * time.Second
	}
	if o.ReclaimDelay <= 0 {
		o.ReclaimDelay = 30 * time.Second
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	// The free list is rebuilt at open instead of written at every
	// commit (as etcd runs bbolt), and kept as a map: commits write less.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType, InitialMmapSize: initialMmapSize()})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w (waited %s)", path, ErrLocked, o.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	reclaim := o.ReclaimDelay
	b := &Bolt{db: db, aliases: newAliasOverlay(), mergeAt: aliasMergeAt, mergeLogBytes: aliasMergeLogBytes, retention: o.Retention, sweepLimit: o.SweepLimit, callTimeout: o.CallTimeout, created: created}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bFeeds, bDue, bDueX, bDead, bData, bMeta, bRuns, bClaims, bLeases, bAliases, bAliasExp} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		// Claims left in the file belong to a process that is gone (the
		// lock proves it), so they are dropped. But a POST it had in flight
		// may still be committing on the service: its items become due only
		// after ReclaimDelay, and their pending marks make that delivery
		// look them up first.
		ob := outboxOf(tx)
		later := time.Now().Add(reclaim).UnixMilli()
		var held []string
		if err := ob.claims.ForEach(func(k, _ []byte) error { held = append(held, string(k)); return nil }); err != nil {
			return err
		}
		for _, m := range held {
			if at, ok := ob.dueAt(m); ok && at < later {
				if err := ob.setDue(m, later); err != nil {
					return err
				}
			}
		}
		if err := tx.DeleteBucket(bClaims); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bClaims); err != nil {
			return err
		}
		// Aliases a process that ended without merging them left in the
		// log (bolt_aliaslog.go).
		return b.replayAliasLog(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b.group = newGroupCommitter(db, b.aliases)
	return b, nil
}

// CreatedFile implements [FileCreator]: OpenBolt made the file at a first
// start, or one after the file was removed.
func (b *Bolt) CreatedFile() string {
	if !b.created {
		return ""
	}
	return b.db.Path()
}

// Close closes the database file, after the writes under way and a merge
// of the aliases waiting in memory (logged already: if the merge fails,
// the next open merges them), once a merge under way has ended.
func (b *Bolt) Close() error {
	b.closeOnce.Do(func() {
		mergeErr := b.mergeAliasesAtClose()
		b.group.close()
		b.closeErr = errors.Join(mergeErr, b.db.Close())
	})
	return b.closeErr
}

func (b *Bolt) update(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	return b.groupWrite(ctx, op, fn, false)
}

// updateLater is update for a write that may wait for company
// (groupCommitter.writeCtx with later).
func (b *Bolt) updateLater(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	return b.groupWrite(ctx, op, fn, true)
}

// groupWrite returns when the write is durable, or at once when ctx ends
// (groupCommitter.writeCtx). Its fn sets the caller's results, which the
// caller reads only after a nil error.
func (b *Bolt) groupWrite(ctx context.Context, op string, fn func(tx *bolt.Tx) error, later bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
	}
	// Every write is group-committed (see bolt_group.go): fn may run
	// twice and must set its results afresh.
	if err := b.group.writeCtx(ctx, fn, later); err != nil {
		return fmt.Errorf("bolt %s: %w", op, keepErrno(err))
	}
	return nil
}

// bounded runs call, waiting for it while ctx lasts and at most limit
// (0: no limit). A bbolt transaction cannot be interrupted: one given up
// on runs to its end in the background. Its fn sets the caller's results,
// which the caller reads only after a nil error, never returned early.
func (b *Bolt) bounded(ctx context.Context, limit time.Duration, call func() error) error {
	if ctx.Done() == nil && limit <= 0 {
		return call()
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	var expired <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		expired = t.C
	}
	select {
	case err := <-done:
		return err
	case <-expired:
		return fmt.Errorf("%w: no answer within %s (the embedded store's disk is slow or stuck)", ErrStoreTimeout, limit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Bolt) view(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
	}
	if err := b.bounded(ctx, b.callTimeout, func() error { return b.db.View(fn) }); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
	}
	return nil
}

// stepEvery is how many items a transaction handles between two looks at
// its context, inside a step of up to stepItems items (steps.go): a stop
// need not wait for the step's end.
const stepEvery = 1024

// stepCheck returns ctx's error every stepEvery items: the step's
// transaction then rolls back whole, so a stop leaves nothing
// half-recorded; the steps before it are durable, and the next process
// records the rest.
func stepCheck(ctx context.Context, n int) error {
	if n%stepEvery == 0 {
		return ctx.Err()
	}
	return nil
}

// feedBuckets are one feed's buckets; nil in a read transaction when the
// feed is unknown.
type feedBuckets struct{ rec, seen, idx, val *bolt.Bucket }

func feedOf(tx *bolt.Tx, feedID string, create bool) (*feedBuckets, error) {
	root := tx.Bucket(bFeeds)
	fb := root.Bucket([]byte(feedID))
	if fb == nil {
		if !create {
			return nil, nil
		}
		var err error
		if fb, err = root.CreateBucket([]byte(feedID)); err != nil {
			return nil, err
		}
		for _, n := range [][]byte{bRec, bSeen, bIdx, bVal} {
			if _, err := fb.CreateBucket(n); err != nil {
				return nil, err
			}
		}
	}
	return &feedBuckets{rec: fb.Bucket(bRec), seen: fb.Bucket(bSeen), idx: dense(fb.Bucket(bIdx)), val: fb.Bucket(bVal)}, nil
}

// appendFill is the fill of pages split in buckets whose keys start with
// a time, so that new keys come last: bbolt splits a page at half its
// size by default, which leaves every page behind such an append half
// empty, and each commit writes twice the pages its new keys need.
const appendFill = 0.9

// dense sets appendFill on a bucket of a write transaction, where bbolt
// keeps the handle (and its fill) until the commit.
func dense(b *bolt.Bucket) *bolt.Bucket {
	if b != nil && b.Writable() {
		b.FillPercent = appendFill
	}
	return b
}

func u64(v int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	return b[:]
}

func fromU64(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b[:8]))
}

func idxKey(at int64, ext string) []byte { return append(u64(at), ext...) }

// touch sets an item's last-seen time, keeping the sweep index in step.
func (f *feedBuckets) touch(ext string, now int64) error {
	if old := f.seen.Get([]byte(ext)); old != nil {
		if err := f.idx.Delete(idxKey(fromU64(old), ext)); err != nil {
			return err
		}
	}
	if err := f.seen.Put([]byte(ext), u64(now)); err != nil {
		return err
	}
	return f.idx.Put(idxKey(now, ext), nil)
}

func (f *feedBuckets) forget(ext string) error {
	if old := f.seen.Get([]byte(ext)); old != nil {
		if err := f.idx.Delete(idxKey(fromU64(old), ext)); err != nil {
			return err
		}
	}
	return errors.Join(f.seen.Delete([]byte(ext)), f.rec.Delete([]byte(ext)))
}

func (f *feedBuckets) record(ext string) (Record, bool, error) {
	v := f.rec.Get([]byte(ext))
	if v == nil {
		return Record{}, false, nil
	}
	r, err := parseRecord(string(v))
	return r, err == nil, err
}

func (f *feedBuckets) putRecord(ext string, r Record) error {
	return f.rec.Put([]byte(ext), r.appendTo(make([]byte, 0, 64+len(r.Hash)+len(r.PublishedHash)+len(r.Type)+len(r.PendingHash))))
}

func (f *feedBuckets) putValidators(v Validators, now int64) error {
	return errors.Join(
		f.val.Put([]byte("etag"), []byte(v.ETag)),
		f.val.Put([]byte("lm"), []byte(v.LastModified)),
		f.val.Put([]byte("at"), u64(now)))
}

// appendTo appends the record's encoding to b, the format shared with
// the Redis scripts (parseRecord).
func (r Record) appendTo(b []byte) []byte {
	b = append(append(append(b, "1|"...), r.Hash...), '|')
	b = append(append(b, r.PublishedHash...), '|')
	if r.ContentID != 0 {
		b = strconv.AppendInt(b, r.ContentID, 10)
	}
	b = append(append(append(b, '|'), r.Type...), '|')
	b = append(appendMS(b, r.FirstSeen), '|')
	b = append(appendMS(b, r.LastPublished), '|')
	b = append(append(b, r.PendingHash...), '|')
	if r.State != StateActive {
		b = utf8.AppendRune(b, rune(r.State))
	}
	return b
}

// appendMS appends t in Unix milliseconds, nothing for the zero time.
func appendMS(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	return strconv.AppendInt(b, t.UnixMilli(), 10)
}

// Diff implements [Store.Diff]: one transaction per step (steps.go),
// items taken in key order.
func (b *Bolt) Diff(ctx context.Context, feedID string, items []Item, v *Validators, now time.Time) (Diff, error) {
	if err := checkItems(feedID, items); err != nil {
		return Diff{}, err
	}
	op := "diff feed " + feedID
	if len(items) > 0 {
		// A feed never seen (its first poll) has nothing to refresh,
		// sweep or fence, and its items are all new: a read answers,
		// without the commit and fsync a write transaction costs. Its
		// buckets are made by the Commit that follows.
		var exists bool
		err := b.view(ctx, op, func(tx *bolt.Tx) error {
			exists = tx.Bucket(bFeeds).Bucket([]byte(feedID)) != nil
			return nil
		})
		if err != nil {
			return Diff{}, err
		}
		if !exists {
			d := Diff{Status: make([]Status, len(items))}
			for i := range d.Status {
				d.Status[i] = StatusNew
			}
			return d, nil
		}
	}
	nowMS := ms(now)
	order := keyOrder(len(items), func(i int) string { return items[i].ExternalID })
	spans := stepSpans(len(order), nil)
	d := Diff{Status: make([]Status, len(items))}
	dirty := false
	for si, sp := range spans {
		if err := beforeStep(ctx, "bolt "+op, si, len(spans)); err != nil {
			return Diff{}, err
		}
		last := si == len(spans)-1
		var known, stepDirty, stored bool
		var expired int
		err := b.update(ctx, op, func(tx *bolt.Tx) error {
			known, stepDirty, stored, expired = false, false, false, 0
			f, err := feedOf(tx, feedID, true)
			if err != nil {
				return err
			}
			if err := f.checkFence(v); err != nil {
				return err
			}
			known = f.known()
			for n, i := range order[sp.lo:sp.hi] {
				if err := stepCheck(ctx, n); err != nil {
					return err
				}
				it := items[i]
				r, ok, err := f.record(it.ExternalID)
				if err != nil {
					return err
				}
				switch {
				case !ok:
					d.Status[i], stepDirty = StatusNew, true
					continue
				case r.Hash != it.Hash:
					d.Status[i], stepDirty = StatusChanged, true
				case r.State == StateSeenOnly:
					d.Status[i] = StatusSkipped
				default:
					d.Status[i] = StatusUnchanged
				}
				if err := f.touch(it.ExternalID, nowMS); err != nil {
					return err
				}
			}
			if !last {
				return nil
			}
			if expired, err = b.sweep(tx, f, feedID, nowMS, ms(now.Add(-b.retention))); err != nil {
				return err
			}
			if !dirty && !stepDirty && v != nil {
				stored = true
				return errors.Join(f.putValidators(*v, nowMS), f.val.Delete(bFirstSight))
			}
			return nil
		})
		if err != nil {
			return Diff{}, err
		}
		dirty = dirty || stepDirty
		if si == 0 {
			// Known as the feed was before this call.
			d.Known = known
		}
		if last {
			d.ValidatorsStored, d.Expired = stored, expired
		}
		if len(spans) > 1 && b.afterStep != nil {
			b.afterStep("diff", si+1)
		}
	}
	return d, nil
}

// known reports whether the feed was seen before: a 200 poll accepted, or
// records, unless its first sight was cut short (steps.go).
func (f *feedBuckets) known() bool {
	if f.val.Get([]byte("at")) != nil {
		return true
	}
	first, _ := f.seen.Cursor().First()
	return first != nil && f.val.Get(bFirstSight) == nil
}

// keyOrder returns the indexes 0..n-1 in the order of their keys, equal
// keys in index order. A transaction writes in key order: bbolt keeps a
// node's keys in a sorted slice until commit, so inserting 100,000 keys
// out of order into one transaction moves memory quadratically (a first
// sight of a 100,000-item feed took minutes in Commit alone). Items are
// independent, and equal keys keep their order, so the outcome is the
// same in any order.
func keyOrder(n int, key func(int) string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(key(a), key(b)) })
	return idx
}

// sweep deletes up to sweepLimit items last seen before cutoff, keeping
// items with undelivered work (their last-seen time is refreshed instead).
func (b *Bolt) sweep(tx *bolt.Tx, f *feedBuckets, feedID string, now, cutoff int64) (int, error) {
	var old []string
	c := f.idx.Cursor()
	for k, _ := c.First(); k != nil && len(old) < b.sweepLimit; k, _ = c.Next() {
		if fromU64(k) >= cutoff {
			break
		}
		old = append(old, string(k[8:]))
	}
	data := payloadsOf(tx)
	expired := 0
	for _, ext := range old {
		if data.has(feedID + "/" + ext) {
			if err := f.touch(ext, now); err != nil {
				return 0, err
			}
			continue
		}
		if err := f.forget(ext); err != nil {
			return 0, err
		}
		expired++
	}
	return expired, nil
}

// Commit implements [Store.Commit]: one transaction per step (steps.go),
// changes taken in key order.
func (b *Bolt) Commit(ctx context.Context, feedID string, changes []Change, v *Validators, now time.Time) ([]Outcome, error) {
	return b.commit(ctx, feedID, changes, v, nil, nil, now)
}

// commit is Commit, storing aliases (checked) as PutAliases would and
// feedID's notes (checked) as SetNote would, in the last step's
// transaction.
func (b *Bolt) commit(ctx context.Context, feedID string, changes []Change, v *Validators, aliases []Alias, notes []NoteWrite, now time.Time) ([]Outcome, error) {
	if err := checkChanges(feedID, changes); err != nil {
		return nil, err
	}
	out := make([]Outcome, len(changes))
	nowMS := ms(now)
	op := "commit feed " + feedID
	order := keyOrder(len(changes), func(i int) string { return changes[i].ExternalID })
	spans := stepSpans(len(order), func(i int) int { return changes[order[i]].size() })
	for si, sp := range spans {
		if err := beforeStep(ctx, "bolt "+op, si, len(spans)); err != nil {
			return nil, err
		}
		last := si == len(spans)-1
		if err := b.update(ctx, op, func(tx *bolt.Tx) error {
			if err := b.commitStep(ctx, tx, feedID, changes, order[sp.lo:sp.hi], out, v, last, nowMS); err != nil {
				return err
			}
			if !last {
				return nil
			}
			if err := setNotesTx(tx, feedID, notes); err != nil {
				return err
			}
			if len(aliases) > 0 {
				return b.putAliasesTx(tx, aliases, nowMS)
			}
			return nil
		}); err != nil {
			if si > 0 {
				return nil, fmt.Errorf("step %d of %d (the earlier steps are recorded): %w", si+1, len(spans), err)
			}
			return nil, err
		}
		if len(spans) > 1 && b.afterStep != nil {
			b.afterStep("commit", si+1)
		}
	}
	return out, nil
}

// commitStep records changes[i] for every i of step, setting out[i]; the
// last step also stores v and ends a first sight (steps.go).
func (b *Bolt) commitStep(ctx context.Context, tx *bolt.Tx, feedID string, changes []Change, step []int, out []Outcome, v *Validators, last bool, nowMS int64) error {
	f, err := feedOf(tx, feedID, true)
	if err != nil {
		return err
	}
	if err := f.checkFence(v); err != nil {
		return err
	}
	if !last && !f.known() {
		if err := f.val.Put(bFirstSight, []byte("1")); err != nil {
			return err
		}
	}
	o := outboxOf(tx)
	for n, i := range step {
		if err := stepCheck(ctx, n); err != nil {
			return err
		}
		c := changes[i]
		member := Key{feedID, c.ExternalID}.String()
		r, ok, err := f.record(c.ExternalID)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			r = Record{Hash: c.Hash, Type: c.Type, FirstSeen: fromMS(nowMS)}
			if c.Action == ActionSeeOnly {
				r.State, out[i] = StateSeenOnly, OutcomeSeen
			} else {
				if err := o.enqueue(member, c.Hash, c.Data, c.Tail, nowMS); err != nil {
					return err
				}
				out[i] = OutcomeNew
			}
		default:
			out[i] = OutcomeUnchanged
			if r.Hash != c.Hash {
				r.Hash = c.Hash
				if r.State == StateActive || r.State == StateDead {
					r.State = StateActive
					if r.ContentID == 0 {
						r.Type = c.Type
					}
					if err := o.enqueue(member, c.Hash, c.Data, c.Tail, nowMS); err != nil {
						return err
					}
					out[i] = OutcomeUpdated
				}
			}
			if c.Action == ActionBackfill && r.State == StateSeenOnly {
				r.State, r.Type = StateActive, c.Type
				if err := o.enqueue(member, c.Hash, c.Data, c.Tail, nowMS); err != nil {
					return err
				}
				out[i] = OutcomeBackfilled
			}
		}
		if err := f.putRecord(c.ExternalID, r); err != nil {
			return err
		}
		if err := f.touch(c.ExternalID, nowMS); err != nil {
			return err
		}
	}
	if !last {
		return nil
	}
	if err := f.val.Delete(bFirstSight); err != nil {
		return err
	}
	if v != nil {
		return f.putValidators(*v, nowMS)
	}
	return nil
}

// Validators implements [Store.Validators].
func (b *Bolt) Validators(ctx context.Context, feedID string) (Validators, bool, error) {
	if err := checkFeedID(feedID); err != nil {
		return Validators{}, false, err
	}
	var v Validators
	var ok bool
	err := b.view(ctx, "validators of feed "+feedID, func(tx *bolt.Tx) error {
		f, err := feedOf(tx, feedID, false)
		if err != nil || f == nil {
			return err
		}
		if f.val.Get([]byte("at")) == nil {
			return nil
		}
		ok = true
		v = Validators{ETag: string(f.val.Get([]byte("etag"))), LastModified: string(f.val.Get([]byte("lm")))}
		return nil
	})
	if err != nil {
		return Validators{}, false, err // v is the background call's, see bounded
	}
	return v, ok, nil
}

// Record implements [Store.Record].
func (b *Bolt) Record(ctx context.Context, k Key) (Record, bool, error) {
	if err := k.check(); err != nil {
		return Record{}, false, err
	}
	var r Record
	var ok bool
	err := b.view(ctx, "record "+k.String(), func(tx *bolt.Tx) error {
		f, err := feedOf(tx, k.FeedID, false)
		if err != nil || f == nil {
			return err
		}
		if r, ok, err = f.record(k.ExternalID); err != nil || !ok {
			return err
		}
		r.LastSeen = fromMS(fromU64(f.seen.Get([]byte(k.ExternalID))))
		return nil
	})
	if err != nil {
		return Record{}, false, err
	}
	return r, ok, nil
}
