package history

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt keeps the history in the embedded store's file, beside (never
// inside) the store's own buckets:
//
//	history/feeds/ID/items  external id → item record (JSON)
//	history/feeds/ID/order  activity ms (8 bytes) + external id → nothing
//	history/feeds/ID/polls  sequence (8 bytes) → poll record (JSON)
//	history/hours           hour start ms (8 bytes) → Hour (JSON)
type Bolt struct {
	db  *bolt.DB
	lim Limits
}

var _ Store = (*Bolt)(nil)

var (
	bHistory = []byte("history")
	bHFeeds  = []byte("feeds")
	bHItems  = []byte("items")
	bHOrder  = []byte("order")
	bHPolls  = []byte("polls")
	bHHours  = []byte("hours")
)

// NewBolt returns the history kept in db, the embedded store's open file.
func NewBolt(db *bolt.DB, lim Limits) *Bolt {
	return &Bolt{db: db, lim: lim.withDefaults()}
}

func be(v int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	return b[:]
}

func orderKey(act int64, id string) []byte { return append(be(act), id...) }

// Write records everything in one transaction: one fsync per flush.
func (s *Bolt) Write(ctx context.Context, batches []Batch, hours map[int64]Hour, outbox int, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bHistory)
		if err != nil {
			return err
		}
		feeds, err := root.CreateBucketIfNotExists(bHFeeds)
		if err != nil {
			return err
		}
		for _, b := range batches {
			if err := s.writeFeed(feeds, b); err != nil {
				return fmt.Errorf("feed %s: %w", b.Feed, err)
			}
		}
		return s.writeHours(root, hours, outbox, now)
	})
	if err != nil {
		return fmt.Errorf("history: write: %w", err)
	}
	return nil
}

func (s *Bolt) writeFeed(feeds *bolt.Bucket, b Batch) error {
	fb, err := feeds.CreateBucketIfNotExists([]byte(b.Feed))
	if err != nil {
		return err
	}
	var items, order, polls *bolt.Bucket
	for _, x := range []struct {
		name []byte
		b    **bolt.Bucket
	}{{bHItems, &items}, {bHOrder, &order}, {bHPolls, &polls}} {
		if *x.b, err = fb.CreateBucketIfNotExists(x.name); err != nil {
			return err
		}
	}
	for _, p := range b.Polls {
		seq, err := polls.NextSequence()
		if err != nil {
			return err
		}
		data, err := json.Marshal(p)
		if err != nil {
			return err
		}
		if err := polls.Put(be(int64(seq)), data); err != nil {
			return err
		}
	}
	if err := trim(polls, s.lim.Polls, nil); err != nil {
		return err
	}
	// Merge every update first, then write only the records that can
	// survive the trim below: a first sight of a 100,000-item feed would
	// otherwise insert 100,000 records to delete all but the newest few
	// hundred, and bbolt's in-memory nodes make that quadratic.
	recs := make(map[string]*record, len(b.Items))
	var ids []string
	for _, u := range b.Items {
		r, seen := recs[u.ID]
		if !seen {
			r = &record{}
			recs[u.ID] = r
			ids = append(ids, u.ID)
			if data := items.Get([]byte(u.ID)); data != nil {
				it, dg, err := parseRecordJSON(data)
				if err != nil {
					return fmt.Errorf("item %s: decode record: %w", u.ID, err)
				}
				r.it, r.dg = &it, dg
				if err := order.Delete(orderKey(it.activity(), it.ID)); err != nil {
					return err
				}
			}
		}
		if err := r.merge(u, s.lim.Events); err != nil {
			return fmt.Errorf("item %s: %w", u.ID, err)
		}
	}
	// Newest first, as the trim orders them (activity, then id).
	slices.SortFunc(ids, func(a, b string) int {
		if c := cmp.Compare(recs[b].it.activity(), recs[a].it.activity()); c != 0 {
			return c
		}
		return strings.Compare(b, a)
	})
	if len(ids) > s.lim.Items {
		for _, id := range ids[s.lim.Items:] {
			// Older than everything kept: what the trim would delete.
			if err := items.Delete([]byte(id)); err != nil {
				return err
			}
		}
		ids = ids[:s.lim.Items]
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := recs[id]
		rec := r.it
		// bbolt keeps the value until the commit: each record its own.
		if err := items.Put([]byte(id), appendRecordJSON(make([]byte, 0, itemJSONSize(rec)+len(r.dg)), rec, r.dg)); err != nil {
			return err
		}
		if err := order.Put(orderKey(rec.activity(), rec.ID), nil); err != nil {
			return err
		}
	}
	return trim(order, s.lim.Items, func(k []byte) error { return items.Delete(k[8:]) })
}

// record is an item record as a write rewrites it. Its digest stays in the
// JSON it is stored as (dg) unless an update brings one that differs: most
// updates carry none (deliveries) or the same (an item seen unchanged), and
// parsing eleven strings into a map and sorting them back out for every
// record a flush touches was a third of the embedded history's work.
type record struct {
	it *Item // nil until the first update, for an item not stored
	// dg is the digest's stored JSON; when set, it.Digest is nil.
	dg []byte
}

// merge applies u: the digest here (kept as its JSON while it is not
// compared), the rest by merge. A Changed event names the fields whose
// digest entries differ from the stored ones, none when they are equal.
func (r *record) merge(u Update, maxEvents int) error {
	if !u.Digest.IsZero() {
		cur, _ := u.Digest.MarshalJSON() // never fails
		switch {
		case r.it == nil || (r.dg == nil && r.it.Digest == nil):
			// The first digest: nothing to compare it with.
			r.dg = cur
		case r.dg != nil && bytes.Equal(r.dg, cur):
			// The same digest: nothing changed.
			if u.Event.Kind == Changed {
				u.Event.Fields = nil
			}
		default:
			if r.dg != nil {
				var old map[string]string
				if err := json.Unmarshal(r.dg, &old); err != nil {
					return fmt.Errorf("decode digest: %w", err)
				}
				r.it.Digest, r.dg = old, nil
			}
			changed := changedFields(r.it.Digest, u.Digest)
			if u.Event.Kind == Changed {
				u.Event.Fields = changed
			}
			if len(changed) > 0 {
				r.it.Digest, r.dg = nil, cur
			}
		}
		u.Digest = Digest{}
	}
	r.it = merge(r.it, u, maxEvents)
	return nil
}

// trim deletes the first (oldest) keys of b beyond keep, calling also for
// each deleted key.
func trim(b *bolt.Bucket, keep int, also func(k []byte) error) error {
	// Counted with a cursor: Stats misses what this transaction wrote.
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	over := n - keep
	if over <= 0 {
		return nil
	}
	var del [][]byte
	for k, _ := c.First(); k != nil && len(del) < over; k, _ = c.Next() {
		del = append(del, bytes.Clone(k))
	}
	for _, k := range del {
		if err := b.Delete(k); err != nil {
			return err
		}
		if also != nil {
			if err := also(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Bolt) writeHours(root *bolt.Bucket, hours map[int64]Hour, outbox int, now time.Time) error {
	if len(hours) == 0 && outbox < 0 {
		return nil
	}
	hb, err := root.CreateBucketIfNotExists(bHHours)
	if err != nil {
		return err
	}
	add := func(start int64, fn func(h *Hour)) error {
		h := Hour{Start: start, Outbox: -1}
		if data := hb.Get(be(start)); data != nil {
			if err := json.Unmarshal(data, &h); err != nil {
				return fmt.Errorf("decode hour: %w", err)
			}
		}
		fn(&h)
		data, err := json.Marshal(h)
		if err != nil {
			return err
		}
		return hb.Put(be(start), data)
	}
	for start, d := range hours {
		if err := add(start, func(h *Hour) {
			h.Published += d.Published
			h.Updated += d.Updated
			h.Failed += d.Failed
		}); err != nil {
			return err
		}
	}
	if outbox >= 0 {
		if err := add(hourOf(now), func(h *Hour) { h.Outbox = outbox }); err != nil {
			return err
		}
	}
	// Hours older than hoursKept go.
	cut := be(hourOf(now.Add(-hoursKept)))
	c := hb.Cursor()
	var del [][]byte
	for k, _ := c.First(); k != nil && bytes.Compare(k, cut) < 0; k, _ = c.Next() {
		del = append(del, bytes.Clone(k))
	}
	for _, k := range del {
		if err := hb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// feedBucket is the feed's history bucket, or nil.
func feedBucket(tx *bolt.Tx, feedID string) *bolt.Bucket {
	root := tx.Bucket(bHistory)
	if root == nil {
		return nil
	}
	feeds := root.Bucket(bHFeeds)
	if feeds == nil {
		return nil
	}
	return feeds.Bucket([]byte(feedID))
}

// Feed reads a feed's items and polls.
func (s *Bolt) Feed(ctx context.Context, feedID string) (Feed, error) {
	var f Feed
	err := s.db.View(func(tx *bolt.Tx) error {
		fb := feedBucket(tx, feedID)
		if fb == nil {
			return nil
		}
		items, order := fb.Bucket(bHItems), fb.Bucket(bHOrder)
		if items != nil && order != nil {
			c := order.Cursor()
			for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
				data := items.Get(k[8:])
				if data == nil {
					continue
				}
				it, err := parseItemJSON(data)
				if err != nil {
					return err
				}
				f.Items = append(f.Items, it)
			}
		}
		var err error
		f.Polls, err = lastPolls(fb, -1)
		return err
	})
	if err != nil {
		return Feed{}, fmt.Errorf("history: read feed %s: %w", feedID, err)
	}
	return f, nil
}

func lastPolls(fb *bolt.Bucket, n int) ([]Poll, error) {
	pb := fb.Bucket(bHPolls)
	if pb == nil {
		return nil, nil
	}
	var raw []string
	c := pb.Cursor()
	for k, v := c.Last(); k != nil && (n < 0 || len(raw) < n); k, v = c.Prev() {
		raw = append(raw, string(v))
	}
	return decodePolls(raw)
}

// Polls reads the last n polls of each feed.
func (s *Bolt) Polls(ctx context.Context, feedIDs []string, n int) (map[string][]Poll, error) {
	out := make(map[string][]Poll, len(feedIDs))
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range feedIDs {
			fb := feedBucket(tx, id)
			if fb == nil {
				out[id] = nil
				continue
			}
			ps, err := lastPolls(fb, n)
			if err != nil {
				return fmt.Errorf("feed %s: %w", id, err)
			}
			out[id] = ps
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: read polls: %w", err)
	}
	return out, nil
}

// Find scans the feeds' item records.
func (s *Bolt) Find(ctx context.Context, feedIDs []string, q string, limit int) ([]Found, error) {
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		return nil, nil
	}
	var out []Found
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range feedIDs {
			fb := feedBucket(tx, id)
			if fb == nil || fb.Bucket(bHItems) == nil {
				continue
			}
			err := fb.Bucket(bHItems).ForEach(func(_, v []byte) error {
				it, err := parseItemJSON(v)
				if err != nil {
					return err
				}
				if it.Matches(q) {
					out = append(out, Found{Feed: id, Item: it})
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("feed %s: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: search: %w", err)
	}
	return sortFound(out, limit), nil
}

// Hours reads the hour counts.
func (s *Bolt) Hours(ctx context.Context, since, now time.Time) ([]Hour, error) {
	stored := map[int64]Hour{}
	err := s.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(bHistory)
		if root == nil || root.Bucket(bHHours) == nil {
			return nil
		}
		c := root.Bucket(bHHours).Cursor()
		for k, v := c.Seek(be(hourOf(since))); k != nil; k, v = c.Next() {
			var h Hour
			if err := json.Unmarshal(v, &h); err != nil {
				return fmt.Errorf("decode hour: %w", err)
			}
			stored[h.Start] = h
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: read hours: %w", err)
	}
	return fillHours(stored, since, now), nil
}

// Size is what a feed's history takes in the file: the bytes its buckets
// use (keys, values, page headers) and the pages allocated to them, for
// measuring its cost.
func (s *Bolt) Size(feedID string) (inuse, alloc int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		fb := feedBucket(tx, feedID)
		if fb == nil {
			return nil
		}
		st := fb.Stats()
		inuse = st.BranchInuse + st.LeafInuse + st.InlineBucketInuse
		alloc = st.BranchAlloc + st.LeafAlloc
		return nil
	})
	return inuse, alloc, err
}
