package dedupe

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bAliases  = []byte("aliases")
	bAliasExp = []byte("aliasexp")
)

// aliasPurge bounds the expired aliases one put deletes.
const aliasPurge = DefaultSweepLimit

var (
	_ AliasIndex     = (*Bolt)(nil)
	_ AliasCommitter = (*Bolt)(nil)
)

func boltAliasKey(f AliasFP) []byte { return []byte(f.FeedID + "\x00" + f.FP) }

// boltAlias splits a stored "value|expiry ms".
func boltAlias(f AliasFP, raw []byte) (Alias, int64, error) {
	s := string(raw)
	i := strings.LastIndexByte(s, '|')
	if i < 0 {
		return Alias{}, 0, fmt.Errorf("alias %s: malformed value %q", f.FP, s)
	}
	exp, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return Alias{}, 0, fmt.Errorf("alias %s: malformed expiry: %w", f.FP, err)
	}
	a, err := parseAliasValue(f, s[:i])
	return a, exp, err
}

func appendAliasExpKey(b []byte, exp int64, key []byte) []byte {
	return append(binary.BigEndian.AppendUint64(b, uint64(exp)), key...)
}

// LookupAliases implements [AliasIndex] in one read transaction.
func (b *Bolt) LookupAliases(ctx context.Context, fps []AliasFP, now time.Time) ([]Alias, error) {
	out := make([]Alias, len(fps))
	for i, f := range fps {
		if err := checkAliasFP(f); err != nil {
			return nil, err
		}
		out[i].AliasFP = f
	}
	err := b.view(ctx, "look up aliases", func(tx *bolt.Tx) error {
		bk := tx.Bucket(bAliases)
		if bk == nil {
			return nil
		}
		// One cursor and key buffer for all: a Get makes a cursor each.
		c := bk.Cursor()
		var key []byte
		for i, f := range fps {
			key = append(append(append(key[:0], f.FeedID...), 0), f.FP...)
			k, raw := c.Seek(key)
			if raw == nil || !bytes.Equal(k, key) {
				continue
			}
			a, exp, err := boltAlias(f, raw)
			if err != nil {
				return err
			}
			if exp > ms(now) {
				out[i] = a
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutAliases implements [AliasIndex] in one transaction, which also purges
// a bounded number of expired aliases.
func (b *Bolt) PutAliases(ctx context.Context, aliases []Alias, now time.Time) error {
	if err := CheckAliases(aliases); err != nil {
		return err
	}
	if len(aliases) == 0 {
		return nil
	}
	return b.update(ctx, "put aliases", func(tx *bolt.Tx) error { return b.putAliasesTx(tx, aliases, ms(now)) })
}

// CommitAliases implements [AliasCommitter]: the aliases are put in the
// transaction of Commit's last step.
func (b *Bolt) CommitAliases(ctx context.Context, feedID string, changes []Change, v *Validators, aliases []Alias, now time.Time) ([]Outcome, error) {
	if err := CheckAliases(aliases); err != nil {
		return nil, err
	}
	return b.commit(ctx, feedID, changes, v, aliases, now)
}

// aliasBuckets opens the aliases and their expiry index in a write
// transaction.
func aliasBuckets(tx *bolt.Tx) (bk, ex *bolt.Bucket, err error) {
	if bk, err = tx.CreateBucketIfNotExists(bAliases); err != nil {
		return nil, nil, err
	}
	if ex, err = tx.CreateBucketIfNotExists(bAliasExp); err != nil {
		return nil, nil, err
	}
	dense(ex)
	return bk, ex, nil
}

// aliasOrder is the order to put aliases in: their keys' (see keyOrder).
// A first sight of a 100,000-item feed puts or reserves as many, and out
// of order that was quadratic. The sort is stable, so of two aliases on
// one key the first given still goes first.
func aliasOrder(aliases []Alias) []int {
	keys := make([]string, len(aliases))
	for i, a := range aliases {
		keys[i] = string(boltAliasKey(a.AliasFP))
	}
	return keyOrder(len(aliases), func(i int) string { return keys[i] })
}

// putAliasesTx is PutAliases (aliases checked) inside a write transaction.
func (b *Bolt) putAliasesTx(tx *bolt.Tx, aliases []Alias, nowMS int64) error {
	w, err := b.aliasWriter(tx, len(aliases))
	if err != nil {
		return err
	}
	for _, i := range aliasOrder(aliases) {
		if _, err := w.put(aliases[i], false, nowMS); err != nil {
			return err
		}
	}
	return purgeAliases(w.ex, w.bk, nowMS)
}

// ReserveAliases implements [AliasIndex] in one transaction.
func (b *Bolt) ReserveAliases(ctx context.Context, aliases []Alias, now time.Time) ([]Alias, error) {
	if err := checkReserve(aliases); err != nil {
		return nil, err
	}
	out := make([]Alias, len(aliases))
	if len(aliases) == 0 {
		return out, nil
	}
	err := b.update(ctx, "reserve aliases", func(tx *bolt.Tx) error {
		w, err := b.aliasWriter(tx, len(aliases))
		if err != nil {
			return err
		}
		nowMS := ms(now)
		for _, i := range aliasOrder(aliases) {
			if out[i], err = w.put(aliases[i], true, nowMS); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// aliasWriter puts the aliases of one write transaction. A fetch's commit
// puts about eight aliases an item, so what each put allocates counts: the
// look-ups share one cursor, the keys one buffer each (bbolt copies the
// keys it stores), and the values are cut from one arena (bbolt keeps a
// value, not a copy, until the commit, so no part of it is ever reused).
type aliasWriter struct {
	bk, ex    *bolt.Bucket
	look      *bolt.Cursor
	key, eKey []byte
	vals      []byte
	retention time.Duration
}

func (b *Bolt) aliasWriter(tx *bolt.Tx, n int) (*aliasWriter, error) {
	bk, ex, err := aliasBuckets(tx)
	if err != nil {
		return nil, err
	}
	return &aliasWriter{bk: bk, ex: ex, look: bk.Cursor(), vals: make([]byte, 0, n*aliasValueSize), retention: b.retention}, nil
}

// aliasValueSize is a guess at a stored alias value's size, for the arena.
const aliasValueSize = 160

// value returns a slice of the arena of its own, of n bytes, filled by fill.
func (w *aliasWriter) value(n int, fill func([]byte) []byte) []byte {
	if cap(w.vals)-len(w.vals) < n {
		// A new arena: the values cut from the old one keep it alive.
		w.vals = make([]byte, 0, max(n, 64*aliasValueSize))
	}
	start := len(w.vals)
	w.vals = fill(w.vals)
	return w.vals[start:len(w.vals):len(w.vals)]
}

// put stores one alias as PutAliases (or, with reserve, ReserveAliases)
// does, and returns the alias held afterwards.
func (w *aliasWriter) put(a Alias, reserve bool, nowMS int64) (Alias, error) {
	w.key = append(append(append(w.key[:0], a.FeedID...), 0), a.FP...)
	key := w.key
	var since int64
	if reserve {
		since = nowMS
	}
	var raw []byte
	if k, v := w.look.Seek(key); bytes.Equal(k, key) {
		raw = v
	}
	var oldExp int64
	if raw != nil {
		old, exp, err := boltAlias(a.AliasFP, raw)
		if err != nil {
			return Alias{}, err
		}
		if exp > nowMS {
			if a.FeedID == "" && old.Target != a.Target {
				return old, nil // across feeds, the first target keeps it
			}
			if a.FeedID == "" && !old.Since.IsZero() {
				since = ms(old.Since)
			}
		}
		oldExp = exp
	}
	ttl := a.TTL
	if ttl <= 0 {
		ttl = w.retention
	}
	exp := nowMS + ttl.Milliseconds()
	a.Since, a.Found = fromMS(since), true
	// The stored form of aliasValue, with "|since" when reserved, and
	// "|expiry".
	n := len(a.Target.FeedID) + len(a.Target.ExternalID) + len(a.Type) + len(a.Extra) + 3 + 2*21
	val := w.value(n, func(b []byte) []byte {
		b = append(append(append(b, a.Target.FeedID...), '/'), a.Target.ExternalID...)
		b = append(append(append(append(b, '|'), a.Type...), '|'), a.Extra...)
		if since != 0 {
			b = strconv.AppendInt(append(b, '|'), since, 10)
		}
		return strconv.AppendInt(append(b, '|'), exp, 10)
	})
	if bytes.Equal(raw, val) {
		// Stored as it is (a fetch puts the aliases it reserved a moment
		// before, at the same time): a write would dirty the page anyway.
		w.vals = w.vals[:len(w.vals)-len(val)]
		return a, nil
	}
	if raw != nil {
		w.eKey = appendAliasExpKey(w.eKey[:0], oldExp, key)
		if err := w.ex.Delete(w.eKey); err != nil {
			return Alias{}, err
		}
	}
	if err := w.bk.Put(key, val); err != nil {
		return Alias{}, err
	}
	w.eKey = appendAliasExpKey(w.eKey[:0], exp, key)
	if err := w.ex.Put(w.eKey, nil); err != nil {
		return Alias{}, err
	}
	return a, nil
}

// purgeAliases deletes a bounded number of expired aliases.
func purgeAliases(ex, bk *bolt.Bucket, nowMS int64) error {
	c := ex.Cursor()
	limit := binary.BigEndian.AppendUint64(nil, uint64(nowMS))
	n := 0
	for k, _ := c.First(); k != nil && n < aliasPurge && bytes.Compare(k[:8], limit) <= 0; k, _ = c.First() {
		if err := bk.Delete(k[8:]); err != nil {
			return err
		}
		if err := ex.Delete(k); err != nil {
			return err
		}
		n++
	}
	return nil
}
