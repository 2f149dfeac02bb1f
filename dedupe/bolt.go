package dedupe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
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
}

// Bolt is the [Store] in an embedded bbolt file, for one worker process
// without Redis. bbolt locks the file, so one process at a time uses it;
// leases are kept anyway so the same code runs on both stores.
//
// Layout: bucket "feeds" holds one bucket per feed with "rec" (external id
// -> record, same encoding as on Redis), "seen" (external id -> last seen
// ms), "idx" (last seen ms + external id, the sweep's order) and "val"
// (etag, lm, at). Top-level buckets "due" (due ms + member) with "duex"
// (member -> due ms), "dead" (member -> ms), "data", "meta", "runs",
// "claims" and "leases" mirror the Redis keys. Every method is one
// transaction.
type Bolt struct {
	db         *bolt.DB
	retention  time.Duration
	sweepLimit int
}

var _ Store = (*Bolt)(nil)

var (
	bFeeds  = []byte("feeds")
	bRec    = []byte("rec")
	bSeen   = []byte("seen")
	bIdx    = []byte("idx")
	bVal    = []byte("val")
	bDue    = []byte("due")
	bDueX   = []byte("duex")
	bDead   = []byte("dead")
	bData   = []byte("data")
	bMeta   = []byte("meta")
	bRuns   = []byte("runs")
	bClaims = []byte("claims")
	bLeases = []byte("leases")
)

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
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	reclaim := o.ReclaimDelay
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bFeeds, bDue, bDueX, bDead, bData, bMeta, bRuns, bClaims, bLeases} {
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
		_, err := tx.CreateBucket(bClaims)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &Bolt{db: db, retention: o.Retention, sweepLimit: o.SweepLimit}, nil
}

// Close closes the database file.
func (b *Bolt) Close() error { return b.db.Close() }

func (b *Bolt) update(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
	}
	if err := b.db.Update(fn); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
	}
	return nil
}

func (b *Bolt) view(ctx context.Context, op string, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
	}
	if err := b.db.View(fn); err != nil {
		return fmt.Errorf("bolt %s: %w", op, err)
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
	return &feedBuckets{rec: fb.Bucket(bRec), seen: fb.Bucket(bSeen), idx: fb.Bucket(bIdx), val: fb.Bucket(bVal)}, nil
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
	return f.rec.Put([]byte(ext), []byte(r.encode()))
}

func (f *feedBuckets) putValidators(v Validators, now int64) error {
	return errors.Join(
		f.val.Put([]byte("etag"), []byte(v.ETag)),
		f.val.Put([]byte("lm"), []byte(v.LastModified)),
		f.val.Put([]byte("at"), u64(now)))
}

// encode is the record format shared with the Redis scripts.
func (r Record) encode() string {
	cid := ""
	if r.ContentID != 0 {
		cid = strconv.FormatInt(r.ContentID, 10)
	}
	st := ""
	if r.State != StateActive {
		st = string(rune(r.State))
	}
	return strings.Join([]string{"1", r.Hash, r.PublishedHash, cid, r.Type,
		msField(r.FirstSeen), msField(r.LastPublished), r.PendingHash, st}, "|")
}

func msField(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func (m meta) encode() []byte {
	return []byte(fmt.Sprintf("%d|%d|%s|%d|%s", m.attempts, m.enqueued, m.hash, m.status, m.reason))
}

// outbox is the top-level buckets of a write transaction.
type outbox struct{ due, dueX, dead, data, meta, runs, claims *bolt.Bucket }

func outboxOf(tx *bolt.Tx) outbox {
	return outbox{tx.Bucket(bDue), tx.Bucket(bDueX), tx.Bucket(bDead), tx.Bucket(bData), tx.Bucket(bMeta), tx.Bucket(bRuns), tx.Bucket(bClaims)}
}

// run returns the entry's run of like failures (see Settlement.Run).
func (o outbox) run(member string) (string, int) {
	return parseRun(string(o.runs.Get([]byte(member))))
}

// failedRun extends the entry's run with one more attempt that ended
// with run, or ends it when run is empty.
func (o outbox) failedRun(member, run string) error {
	if run == "" {
		return o.runs.Delete([]byte(member))
	}
	n := 1
	if cur, length := o.run(member); cur == run {
		n = length + 1
	}
	return o.runs.Put([]byte(member), []byte(run+"|"+strconv.Itoa(n)))
}

func (o outbox) dueAt(member string) (int64, bool) {
	v := o.dueX.Get([]byte(member))
	return fromU64(v), v != nil
}

func (o outbox) setDue(member string, at int64) error {
	if old, ok := o.dueAt(member); ok {
		if err := o.due.Delete(append(u64(old), member...)); err != nil {
			return err
		}
	}
	return errors.Join(o.due.Put(append(u64(at), member...), nil), o.dueX.Put([]byte(member), u64(at)))
}

func (o outbox) unsetDue(member string) error {
	if old, ok := o.dueAt(member); ok {
		return errors.Join(o.due.Delete(append(u64(old), member...)), o.dueX.Delete([]byte(member)))
	}
	return nil
}

func (o outbox) getMeta(member string) (meta, bool, error) {
	v := o.meta.Get([]byte(member))
	if v == nil {
		return meta{}, false, nil
	}
	m, err := parseMeta(string(v))
	return m, err == nil, err
}

func (o outbox) putMeta(member string, m meta) error {
	return o.meta.Put([]byte(member), m.encode())
}

// enqueue mirrors the commit script's enqueue.
func (o outbox) enqueue(member, hash string, data []byte, now int64) error {
	if err := o.data.Put([]byte(member), data); err != nil {
		return err
	}
	m, ok, err := o.getMeta(member)
	if err != nil {
		return err
	}
	if _, queued := o.dueAt(member); queued && ok {
		m.hash = hash
	} else {
		m = meta{enqueued: now, hash: hash}
		if err := o.setDue(member, now); err != nil {
			return err
		}
		if err := errors.Join(o.dead.Delete([]byte(member)), o.runs.Delete([]byte(member))); err != nil {
			return err
		}
	}
	return o.putMeta(member, m)
}

func (o outbox) drop(member string) error {
	return errors.Join(o.unsetDue(member), o.dead.Delete([]byte(member)),
		o.data.Delete([]byte(member)), o.meta.Delete([]byte(member)), o.runs.Delete([]byte(member)))
}

// Diff implements [Store.Diff] in one transaction.
func (b *Bolt) Diff(ctx context.Context, feedID string, items []Item, v *Validators, now time.Time) (Diff, error) {
	if err := checkItems(feedID, items); err != nil {
		return Diff{}, err
	}
	d := Diff{Status: make([]Status, len(items))}
	nowMS := ms(now)
	err := b.update(ctx, "diff feed "+feedID, func(tx *bolt.Tx) error {
		f, err := feedOf(tx, feedID, true)
		if err != nil {
			return err
		}
		first, _ := f.seen.Cursor().First()
		d.Known = f.val.Get([]byte("at")) != nil || first != nil
		dirty := false
		for i, it := range items {
			r, ok, err := f.record(it.ExternalID)
			if err != nil {
				return err
			}
			switch {
			case !ok:
				d.Status[i], dirty = StatusNew, true
				continue
			case r.Hash != it.Hash:
				d.Status[i], dirty = StatusChanged, true
			case r.State == StateSeenOnly:
				d.Status[i] = StatusSkipped
			default:
				d.Status[i] = StatusUnchanged
			}
			if err := f.touch(it.ExternalID, nowMS); err != nil {
				return err
			}
		}
		if d.Expired, err = b.sweep(tx, f, feedID, nowMS, ms(now.Add(-b.retention))); err != nil {
			return err
		}
		if !dirty && v != nil {
			d.ValidatorsStored = true
			return f.putValidators(*v, nowMS)
		}
		return nil
	})
	if err != nil {
		return Diff{}, err
	}
	return d, nil
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
	data := tx.Bucket(bData)
	expired := 0
	for _, ext := range old {
		if data.Get([]byte(feedID+"/"+ext)) != nil {
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

// Commit implements [Store.Commit] in one transaction.
func (b *Bolt) Commit(ctx context.Context, feedID string, changes []Change, v *Validators, now time.Time) ([]Outcome, error) {
	if err := checkChanges(feedID, changes); err != nil {
		return nil, err
	}
	out := make([]Outcome, len(changes))
	nowMS := ms(now)
	err := b.update(ctx, "commit feed "+feedID, func(tx *bolt.Tx) error {
		f, err := feedOf(tx, feedID, true)
		if err != nil {
			return err
		}
		o := outboxOf(tx)
		for i, c := range changes {
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
					if err := o.enqueue(member, c.Hash, c.Data, nowMS); err != nil {
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
						if err := o.enqueue(member, c.Hash, c.Data, nowMS); err != nil {
							return err
						}
						out[i] = OutcomeUpdated
					}
				}
				if c.Action == ActionBackfill && r.State == StateSeenOnly {
					r.State, r.Type = StateActive, c.Type
					if err := o.enqueue(member, c.Hash, c.Data, nowMS); err != nil {
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
		if v != nil {
			return f.putValidators(*v, nowMS)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
	return v, ok, err
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
	return r, ok, err
}

// claimedBy reports whether a live claim on member is held, and by whom.
func claimedBy(claims *bolt.Bucket, member string, wall int64) (string, bool) {
	v := claims.Get([]byte(member))
	if v == nil || fromU64(v) <= wall {
		return "", false
	}
	return string(v[8:]), true
}

// Claim implements [Store.Claim] in one transaction. Claim expiry runs on
// this process's wall clock, as Redis's runs on the server's.
func (b *Bolt) Claim(ctx context.Context, owner string, max int, ttl time.Duration, now time.Time) ([]Claimed, time.Time, error) {
	if max <= 0 || owner == "" || ttl <= 0 {
		return nil, time.Time{}, fmt.Errorf("claim: %w: want an owner, max > 0 and ttl > 0", ErrInvalid)
	}
	var out []Claimed
	var next time.Time
	nowMS := ms(now)
	err := b.update(ctx, "claim", func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		wall := time.Now().UnixMilli()
		var members []string
		c := o.due.Cursor()
		scanned := 0
		for k, _ := c.First(); k != nil && len(members) < max && scanned < 1000; k, _ = c.Next() {
			if fromU64(k) > nowMS {
				break
			}
			scanned++
			member := string(k[8:])
			if _, held := claimedBy(o.claims, member, wall); !held {
				members = append(members, member)
			}
		}
		for _, member := range members {
			data := o.data.Get([]byte(member))
			m, ok, err := o.getMeta(member)
			key, kerr := ParseKey(member)
			if err != nil || !ok || data == nil || kerr != nil {
				// An entry without its payload cannot be delivered; drop
				// it rather than spin on it.
				if err := o.unsetDue(member); err != nil {
					return err
				}
				continue
			}
			if err := o.claims.Put([]byte(member), append(u64(wall+ttl.Milliseconds()), owner...)); err != nil {
				return err
			}
			cl := Claimed{Key: key, Data: bytes.Clone(data), Hash: m.hash, Attempts: m.attempts, Enqueued: fromMS(m.enqueued)}
			cl.Run, cl.RunLength = o.run(member)
			f, err := feedOf(tx, key.FeedID, true)
			if err != nil {
				return err
			}
			r, ok, err := f.record(key.ExternalID)
			if err != nil {
				return err
			}
			if ok {
				cl.Record = r
				// A mark already set stays, with the hash of the earliest
				// POST that may have landed.
				if r.ContentID == 0 && r.PendingHash == "" {
					r.PendingHash = m.hash
					if err := f.putRecord(key.ExternalID, r); err != nil {
						return err
					}
				}
			}
			out = append(out, cl)
		}
		if len(out) > 0 {
			return nil
		}
		c = o.due.Cursor()
		i := 0
		for k, _ := c.First(); k != nil && i < 100; k, _ = c.Next() {
			i++
			if _, held := claimedBy(o.claims, string(k[8:]), wall); !held {
				next = fromMS(fromU64(k))
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return out, next, nil
}

// Settle implements [Store.Settle] in one transaction.
func (b *Bolt) Settle(ctx context.Context, k Key, owner string, s Settlement, now time.Time) (bool, error) {
	if err := k.check(); err != nil {
		return false, err
	}
	kind, err := s.kindName()
	if err != nil {
		return false, err
	}
	if err := checkToken("run", s.Run); err != nil {
		return false, err
	}
	member := k.String()
	nowMS := ms(now)
	var held bool
	err = b.update(ctx, "settle "+member+" ("+kind+")", func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		holder, live := claimedBy(o.claims, member, time.Now().UnixMilli())
		held = live && holder == owner
		f, err := feedOf(tx, k.FeedID, true)
		if err != nil {
			return err
		}
		r, exists, err := f.record(k.ExternalID)
		if err != nil {
			return err
		}
		if !exists {
			r = Record{Hash: s.Hash, Type: s.Type, FirstSeen: fromMS(nowMS)}
		}
		if !held {
			// The claim lapsed: whoever holds it now owns the item's
			// state. Only a content id the API really gave is kept, on a
			// record without one, so a later send updates it.
			if s.Kind == Delivered && r.ContentID == 0 {
				r.ContentID, r.Type, r.PublishedHash, r.LastPublished = s.ContentID, s.Type, s.Hash, fromMS(nowMS)
				return f.putRecord(k.ExternalID, r)
			}
			return nil
		}
		m, hasMeta, err := o.getMeta(member)
		if err != nil {
			return err
		}
		failed := func() error {
			m.attempts++
			m.status, m.reason = s.Status, oneLine(s.Reason)
			return o.failedRun(member, s.Run)
		}
		write := exists
		switch s.Kind {
		case Delivered:
			r.ContentID, r.Type, r.PublishedHash = s.ContentID, s.Type, s.Hash
			r.LastPublished, r.PendingHash, r.State = fromMS(nowMS), "", StateActive
			write = true
			err = o.runs.Delete([]byte(member))
			if hasMeta && err == nil {
				if m.hash == s.Hash {
					err = o.drop(member)
				} else {
					m.attempts, m.status, m.reason = 0, 0, ""
					err = errors.Join(o.putMeta(member, m), o.setDue(member, nowMS))
				}
			}
		case Retry:
			if !s.Ambiguous {
				r.PendingHash = ""
			}
			if s.ForgetContent {
				r.ContentID, r.PublishedHash = 0, ""
			}
			if hasMeta {
				err = errors.Join(failed(), o.putMeta(member, m), o.setDue(member, ms(s.Next)))
			}
		case Dead:
			if !s.Ambiguous {
				r.PendingHash = ""
			}
			r.State = StateDead
			if hasMeta {
				err = errors.Join(failed(), o.putMeta(member, m), o.unsetDue(member), o.dead.Put([]byte(member), u64(nowMS)))
			}
		case Removed:
			r.PendingHash, r.State = "", StateRemoved
			err = o.drop(member)
		case Release:
			if !s.Ambiguous {
				r.PendingHash = ""
			}
			if _, queued := o.dueAt(member); hasMeta && queued && !s.Next.IsZero() {
				err = o.setDue(member, ms(s.Next))
			}
		}
		if err != nil {
			return err
		}
		if write {
			if err := f.putRecord(k.ExternalID, r); err != nil {
				return err
			}
		}
		return o.claims.Delete([]byte(member))
	})
	return held, err
}

// RenewClaim implements [Store.RenewClaim] in one transaction. Like
// Claim, it runs claim expiry on this process's wall clock.
func (b *Bolt) RenewClaim(ctx context.Context, k Key, owner string, ttl time.Duration) (Renewal, error) {
	if err := k.check(); err != nil {
		return Renewal{}, err
	}
	if owner == "" || ttl < time.Millisecond {
		return Renewal{}, fmt.Errorf("renew claim %s: %w: empty owner or ttl under 1ms", k, ErrInvalid)
	}
	member := k.String()
	var rn Renewal
	err := b.update(ctx, "renew claim "+member, func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		wall := time.Now().UnixMilli()
		holder, live := claimedBy(o.claims, member, wall)
		rn.Held = live && holder == owner
		if rn.Held {
			if err := o.claims.Put([]byte(member), append(u64(wall+ttl.Milliseconds()), owner...)); err != nil {
				return err
			}
		}
		f, err := feedOf(tx, k.FeedID, false)
		if err != nil || f == nil {
			return err
		}
		rn.Record, rn.Known, err = f.record(k.ExternalID)
		return err
	})
	return rn, err
}

// DeadLetters implements [Store.DeadLetters].
func (b *Bolt) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	var out []DeadLetter
	err := b.view(ctx, "dead letters", func(tx *bolt.Tx) error {
		o := outbox{dead: tx.Bucket(bDead), data: tx.Bucket(bData), meta: tx.Bucket(bMeta)}
		return o.dead.ForEach(func(k, v []byte) error {
			key, err := ParseKey(string(k))
			if err != nil {
				return err
			}
			d := DeadLetter{ID: string(k), Key: key, At: fromMS(fromU64(v)), Data: bytes.Clone(o.data.Get(k))}
			m, ok, err := o.getMeta(string(k))
			if err != nil {
				return err
			}
			if ok {
				d.Hash, d.Attempts, d.Status, d.Reason, d.Enqueued = m.hash, m.attempts, m.status, m.reason, fromMS(m.enqueued)
			}
			out = append(out, d)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	// Oldest first, as on Redis (the bucket is ordered by member).
	slices.SortStableFunc(out, func(a, b DeadLetter) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RetryDeadLetter implements [Store.RetryDeadLetter].
func (b *Bolt) RetryDeadLetter(ctx context.Context, id string, now time.Time) (bool, error) {
	if _, err := ParseKey(id); err != nil {
		return false, err
	}
	n, err := b.retryDead(ctx, id, now)
	return n == 1, err
}

// RetryDeadLetters implements [Store.RetryDeadLetters].
func (b *Bolt) RetryDeadLetters(ctx context.Context, now time.Time) (int, error) {
	return b.retryDead(ctx, "", now)
}

func (b *Bolt) retryDead(ctx context.Context, id string, now time.Time) (int, error) {
	n := 0
	err := b.update(ctx, "retry dead letters", func(tx *bolt.Tx) error {
		o := outboxOf(tx)
		var members []string
		if id != "" {
			if o.dead.Get([]byte(id)) != nil {
				members = append(members, id)
			}
		} else {
			if err := o.dead.ForEach(func(k, _ []byte) error {
				members = append(members, string(k))
				return nil
			}); err != nil {
				return err
			}
		}
		for _, member := range members {
			if err := errors.Join(o.dead.Delete([]byte(member)), o.runs.Delete([]byte(member)), o.setDue(member, ms(now))); err != nil {
				return err
			}
			if m, ok, err := o.getMeta(member); err != nil {
				return err
			} else if ok {
				m.attempts = 0
				if err := o.putMeta(member, m); err != nil {
					return err
				}
			}
			key, err := ParseKey(member)
			if err != nil {
				return err
			}
			f, err := feedOf(tx, key.FeedID, true)
			if err != nil {
				return err
			}
			if r, ok, err := f.record(key.ExternalID); err != nil {
				return err
			} else if ok {
				if r.State == StateDead {
					r.State = StateActive
				}
				if err := f.putRecord(key.ExternalID, r); err != nil {
					return err
				}
			}
			n++
		}
		return nil
	})
	return n, err
}

// Stats implements [Store.Stats].
func (b *Bolt) Stats(ctx context.Context, now time.Time) (Stats, error) {
	var s Stats
	err := b.view(ctx, "stats", func(tx *bolt.Tx) error {
		nowMS := ms(now)
		c := tx.Bucket(bDue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			s.Outbox++
			if fromU64(k) <= nowMS {
				s.Due++
			}
		}
		return tx.Bucket(bDead).ForEach(func(_, _ []byte) error { s.DeadLetters++; return nil })
	})
	return s, err
}

// AcquireLease implements [Store.AcquireLease].
func (b *Bolt) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return b.lease(ctx, "acquire", name, owner, ttl)
}

// RenewLease implements [Store.RenewLease].
func (b *Bolt) RenewLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return b.lease(ctx, "renew", name, owner, ttl)
}

// ReleaseLease implements [Store.ReleaseLease].
func (b *Bolt) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := b.lease(ctx, "release", name, owner, 0)
	return err
}

func (b *Bolt) lease(ctx context.Context, op, name, owner string, ttl time.Duration) (bool, error) {
	if name == "" || owner == "" {
		return false, fmt.Errorf("%s lease: %w: empty name or owner", op, ErrInvalid)
	}
	if op != "release" && ttl < time.Millisecond {
		return false, fmt.Errorf("%s lease %q: %w: ttl under 1ms", op, name, ErrInvalid)
	}
	var ok bool
	err := b.update(ctx, op+" lease "+name, func(tx *bolt.Tx) error {
		leases := tx.Bucket(bLeases)
		wall := time.Now().UnixMilli()
		holder, live := claimedBy(leases, name, wall)
		mine := live && holder == owner
		switch {
		case op == "release":
			if mine {
				ok = true
				return leases.Delete([]byte(name))
			}
			return nil
		case mine || (op == "acquire" && !live):
			ok = true
			return leases.Put([]byte(name), append(u64(wall+ttl.Milliseconds()), owner...))
		}
		return nil
	})
	return ok, err
}
