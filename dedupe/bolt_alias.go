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

func aliasExpKey(exp int64, key []byte) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(key)), uint64(exp))
	return append(b, key...)
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
		for i, f := range fps {
			raw := bk.Get(boltAliasKey(f))
			if raw == nil {
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
	bk, ex, err := aliasBuckets(tx)
	if err != nil {
		return err
	}
	for _, i := range aliasOrder(aliases) {
		if _, err := b.putAlias(bk, ex, aliases[i], false, nowMS); err != nil {
			return err
		}
	}
	return purgeAliases(ex, bk, nowMS)
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
		bk, ex, err := aliasBuckets(tx)
		if err != nil {
			return err
		}
		nowMS := ms(now)
		for _, i := range aliasOrder(aliases) {
			if out[i], err = b.putAlias(bk, ex, aliases[i], true, nowMS); err != nil {
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

// putAlias stores one alias as PutAliases (or, with reserve,
// ReserveAliases) does, and returns the alias held afterwards.
func (b *Bolt) putAlias(bk, ex *bolt.Bucket, a Alias, reserve bool, nowMS int64) (Alias, error) {
	key := boltAliasKey(a.AliasFP)
	var since int64
	if reserve {
		since = nowMS
	}
	raw := bk.Get(key)
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
		ttl = b.retention
	}
	exp := nowMS + ttl.Milliseconds()
	val := aliasValue(a)
	if since != 0 {
		val += "|" + strconv.FormatInt(since, 10)
	}
	val += "|" + strconv.FormatInt(exp, 10)
	a.Since, a.Found = fromMS(since), true
	if string(raw) == val {
		// Stored as it is (a fetch puts the aliases it reserved a moment
		// before, at the same time): a write would dirty the page anyway.
		return a, nil
	}
	if raw != nil {
		if err := ex.Delete(aliasExpKey(oldExp, key)); err != nil {
			return Alias{}, err
		}
	}
	if err := bk.Put(key, []byte(val)); err != nil {
		return Alias{}, err
	}
	if err := ex.Put(aliasExpKey(exp, key), nil); err != nil {
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
