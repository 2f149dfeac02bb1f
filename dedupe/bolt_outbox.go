package dedupe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// encode is "attempts|enqueued|hash|status|reason" (parseMeta).
func (m meta) encode() []byte {
	b := make([]byte, 0, 48+len(m.hash)+len(m.reason))
	b = append(strconv.AppendInt(b, int64(m.attempts), 10), '|')
	b = append(strconv.AppendInt(b, m.enqueued, 10), '|')
	b = append(append(b, m.hash...), '|')
	b = append(strconv.AppendInt(b, int64(m.status), 10), '|')
	return append(b, m.reason...)
}

// outbox is the top-level buckets of a write transaction. One outbox
// serves all of a transaction's entries that it can (a claim's, a batch
// of settles'), so that they share its buckets' cursors (keyed).
type outbox struct {
	due, dueX, dead *keyed
	data            payloads
	meta, runs      *keyed
	claims          *keyed
}

func outboxOf(tx *bolt.Tx) outbox {
	return outbox{newKeyed(dense(tx.Bucket(bDue))), newKeyed(tx.Bucket(bDueX)), newKeyed(tx.Bucket(bDead)), payloadsOf(tx),
		newKeyed(tx.Bucket(bMeta)), newKeyed(tx.Bucket(bRuns)), newKeyed(tx.Bucket(bClaims))}
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
func (o outbox) enqueue(member, hash string, data []byte, tail string, now int64) error {
	if err := o.data.put(member, data, tail); err != nil {
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
		o.data.delete(member), o.meta.Delete([]byte(member)), o.runs.Delete([]byte(member)))
}

// claimedBy reports whether a live claim on member is held, and by whom.
func claimedBy(claims interface{ Get([]byte) []byte }, member string, wall int64) (string, bool) {
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
		out, next = nil, time.Time{}
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
			// A claim of this same owner string is one whose answer
			// was lost (a timeout): the retry of that call takes it again.
			if cur, held := claimedBy(o.claims, member, wall); !held || cur == owner {
				members = append(members, member)
			}
		}
		for _, member := range members {
			data, derr := o.data.get(member)
			m, ok, err := o.getMeta(member)
			key, kerr := ParseKey(member)
			if derr != nil && err == nil && ok && kerr == nil {
				// A payload this worker cannot read (a damaged page, or
				// a newer worker's codec): a dead letter that says so,
				// kept for a worker that can, not an item dropped unseen.
				m.reason = derr.Error()
				if err := errors.Join(o.putMeta(member, m), o.unsetDue(member), o.dead.Put([]byte(member), u64(nowMS))); err != nil {
					return err
				}
				continue
			}
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
			// data is get's own new slice, written nowhere again: the
			// string shares it rather than copying an item's post.
			cl := Claimed{Key: key, Data: unsafe.String(unsafe.SliceData(data), len(data)), Hash: m.hash, Attempts: m.attempts, Enqueued: fromMS(m.enqueued)}
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
	var held bool
	err = b.update(ctx, "settle "+k.String()+" ("+kind+")", func(tx *bolt.Tx) error {
		var err error
		held, err = settleTx(tx, outboxOf(tx), k, owner, s, ms(now))
		return err
	})
	if err != nil {
		return false, err
	}
	return held, nil
}

// settleTx is Settle inside a write transaction, whose outbox is o.
func settleTx(tx *bolt.Tx, o outbox, k Key, owner string, s Settlement, nowMS int64) (bool, error) {
	member := k.String()
	holder, live := claimedBy(o.claims, member, time.Now().UnixMilli())
	held := live && holder == owner
	f, err := feedOf(tx, k.FeedID, true)
	if err != nil {
		return held, err
	}
	r, exists, err := f.record(k.ExternalID)
	if err != nil {
		return held, err
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
			return held, f.putRecord(k.ExternalID, r)
		}
		return held, nil
	}
	m, hasMeta, err := o.getMeta(member)
	if err != nil {
		return held, err
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
	case Aliased:
		r.PendingHash, r.State = "", StateSeenOnly
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
		return held, err
	}
	if write {
		if err := f.putRecord(k.ExternalID, r); err != nil {
			return held, err
		}
	}
	return held, o.claims.Delete([]byte(member))
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
	var rn Renewal
	err := b.update(ctx, "renew claim "+k.String(), func(tx *bolt.Tx) error {
		var err error
		rn, err = renewTx(tx, outboxOf(tx), k, owner, ttl)
		return err
	})
	if err != nil {
		return Renewal{}, err
	}
	return rn, nil
}

// renewTx is RenewClaim inside a write transaction, whose outbox is o.
func renewTx(tx *bolt.Tx, o outbox, k Key, owner string, ttl time.Duration) (Renewal, error) {
	var rn Renewal
	member := k.String()
	wall := time.Now().UnixMilli()
	holder, live := claimedBy(o.claims, member, wall)
	rn.Held = live && holder == owner
	if rn.Held {
		if err := o.claims.Put([]byte(member), append(u64(wall+ttl.Milliseconds()), owner...)); err != nil {
			return rn, err
		}
	}
	f, err := feedOf(tx, k.FeedID, false)
	if err != nil || f == nil {
		return rn, err
	}
	rn.Record, rn.Known, err = f.record(k.ExternalID)
	return rn, err
}

// DeadLetters implements [Store.DeadLetters].
func (b *Bolt) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	var out []DeadLetter
	err := b.view(ctx, "dead letters", func(tx *bolt.Tx) error {
		o := outbox{dead: newKeyed(tx.Bucket(bDead)), data: payloadsOf(tx), meta: newKeyed(tx.Bucket(bMeta))}
		return o.dead.ForEach(func(k, v []byte) error {
			key, err := ParseKey(string(k))
			if err != nil {
				return err
			}
			// One unreadable payload leaves its entry listed without
			// data, its cause in the reason, rather than the list failing.
			data, derr := o.data.get(string(k))
			d := DeadLetter{ID: string(k), Key: key, At: fromMS(fromU64(v)), Data: data}
			m, ok, err := o.getMeta(string(k))
			if err != nil {
				return err
			}
			if ok {
				d.Hash, d.Attempts, d.Status, d.Reason, d.Enqueued = m.hash, m.attempts, m.status, m.reason, fromMS(m.enqueued)
			}
			if derr != nil && !strings.Contains(d.Reason, derr.Error()) {
				d.Reason = strings.TrimPrefix(d.Reason+"; "+derr.Error(), "; ")
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
		n = 0
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
	if err != nil {
		return 0, err
	}
	return n, nil
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
	if err != nil {
		return Stats{}, err
	}
	return s, nil
}
