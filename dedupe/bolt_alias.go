package dedupe

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
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

func boltAliasKey(f AliasFP) []byte { return appendBoltAliasKey(nil, f) }

// appendBoltAliasKey appends the bucket's key of f, "feed\x00fingerprint"
// ("\x00fingerprint" across feeds), to b.
func appendBoltAliasKey(b []byte, f AliasFP) []byte {
	return append(append(append(b, f.FeedID...), 0), f.FP...)
}

// boltAlias splits a stored "value|expiry ms".
func boltAlias(f AliasFP, raw []byte) (Alias, int64, error) {
	v, exp, err := splitAliasExp(raw)
	if err != nil {
		return Alias{}, 0, fmt.Errorf("alias %s: %w", f.FP, err)
	}
	a, err := parseAliasValue(f, v)
	return a, exp, err
}

// splitAliasExp splits a stored "value|expiry ms".
func splitAliasExp(raw []byte) (string, int64, error) {
	s := string(raw)
	i := strings.LastIndexByte(s, '|')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed value %q", s)
	}
	exp, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("malformed expiry: %w", err)
	}
	return s[:i], exp, nil
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
	// Aliases across feeds are looked up in the overlay first, then in the
	// bucket, in a transaction begun after: one leaves the overlay only
	// once the bucket has it.
	inOverlay, err := b.aliases.lookup(fps, out, ms(now))
	if err != nil {
		return nil, err
	}
	err = b.view(ctx, "look up aliases", func(tx *bolt.Tx) error {
		bk := tx.Bucket(bAliases)
		if bk == nil {
			return nil
		}
		// One cursor and key buffer for all: a Get makes a cursor each.
		c := bk.Cursor()
		var key []byte
		for i, f := range fps {
			if inOverlay[i] {
				continue
			}
			key = appendBoltAliasKey(key[:0], f)
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
	if err := b.mergeAliasesIfDue(ctx); err != nil {
		return err
	}
	return b.update(ctx, "put aliases", func(tx *bolt.Tx) error { return b.putAliasesTx(tx, aliases, ms(now)) })
}

// CommitAliases implements [AliasCommitter]: the aliases and notes are
// put in the transaction of Commit's last step.
func (b *Bolt) CommitAliases(ctx context.Context, feedID string, changes []Change, v *Validators, aliases []Alias, notes []NoteWrite, now time.Time) ([]Outcome, error) {
	if err := CheckAliases(aliases); err != nil {
		return nil, err
	}
	if err := checkNoteWrites(feedID, notes); err != nil {
		return nil, err
	}
	// The merge a put of aliases makes due is checked at the next one,
	// before it: a merge that fails fails a call that did nothing yet.
	if len(aliases) > 0 {
		if err := b.mergeAliasesIfDue(ctx); err != nil {
			return nil, err
		}
	}
	return b.commit(ctx, feedID, changes, v, aliases, notes, now)
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
// one key the first given still goes first. Keys are compared as
// appendBoltAliasKey writes them, without writing them.
func aliasOrder(aliases []Alias) []int {
	idx := make([]int, len(aliases))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return compareAliasKeys(aliases[i].AliasFP, aliases[j].AliasFP) })
	return idx
}

// compareAliasKeys compares the keys appendBoltAliasKey makes of a and b,
// "feed NUL fingerprint", as bytes.Compare would.
func compareAliasKeys(a, b AliasFP) int {
	if a.FeedID == b.FeedID {
		return strings.Compare(a.FP, b.FP)
	}
	// The keys differ within the shorter feed id and its NUL: at the
	// first byte where the ids differ, or, where one id is a prefix of
	// the other, at the NUL against the longer id's next byte.
	n := min(len(a.FeedID), len(b.FeedID))
	if c := strings.Compare(a.FeedID[:n], b.FeedID[:n]); c != 0 {
		return c
	}
	if len(a.FeedID) < len(b.FeedID) {
		if c := cmp.Compare(0, b.FeedID[n]); c != 0 {
			return c
		}
	} else if c := cmp.Compare(a.FeedID[n], 0); c != 0 {
		return c
	}
	// A NUL in the longer id, against the shorter one's: the keys
	// themselves tell.
	return bytes.Compare(boltAliasKey(a), boltAliasKey(b))
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
	if err := w.flushExpiry(); err != nil {
		return err
	}
	return w.purge(nowMS)
}

// ReserveAliases implements [AliasIndex]. The reservations go to the
// overlay in memory (bolt_aliaslog.go), atomically with respect to every
// other reservation and every put committed (one staged by a transaction
// under way is not seen: bolt_aliasstage.go), and are logged by the store's next commit,
// before any write that could depend on them is durable; the caller's
// own commit is one such write.
func (b *Bolt) ReserveAliases(ctx context.Context, aliases []Alias, now time.Time) ([]Alias, error) {
	if err := checkReserve(aliases); err != nil {
		return nil, err
	}
	out := make([]Alias, len(aliases))
	if len(aliases) == 0 {
		return out, nil
	}
	if err := b.mergeAliasesIfDue(ctx); err != nil {
		return nil, err
	}
	keys := make([][]byte, len(aliases))
	for i, a := range aliases {
		keys[i] = boltAliasKey(a.AliasFP)
	}
	order := aliasOrder(aliases)
	o := b.aliases
	for {
		// The bucket is read only for keys the overlay does not hold, and
		// without o.mu, which every commit's log record takes. A merge
		// takes keys out of the overlay only once they are in the bucket,
		// under o.mu: a transaction begun after the keys were looked at
		// sees those the overlay no longer holds then, and if a merge
		// committed since, keys set after the look may have moved to the
		// bucket after the read, so it is read again. Keys set since are
		// found in the overlay below.
		o.mu.Lock()
		merges := o.merges
		var fromBucket []int
		for i := range aliases {
			if _, ok := o.get(keys[i]); !ok {
				fromBucket = append(fromBucket, i)
			}
		}
		o.mu.Unlock()
		raws, err := b.readAliases(ctx, keys, fromBucket)
		if err != nil {
			return nil, err
		}
		if b.afterAliasRead != nil {
			b.afterAliasRead()
		}
		o.mu.Lock()
		if o.merges != merges {
			o.mu.Unlock()
			continue
		}
		err = b.reserveLocked(aliases, order, keys, raws, out, ms(now))
		o.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// readAliases returns the bucket's values at keys[i] for each i of which
// (nil where none).
func (b *Bolt) readAliases(ctx context.Context, keys [][]byte, which []int) ([][]byte, error) {
	raws := make([][]byte, len(keys))
	if len(which) == 0 {
		return raws, nil
	}
	err := b.view(ctx, "reserve aliases", func(tx *bolt.Tx) error {
		bk := tx.Bucket(bAliases)
		if bk == nil {
			return nil
		}
		c := bk.Cursor()
		for _, i := range which {
			if k, v := c.Seek(keys[i]); bytes.Equal(k, keys[i]) {
				raws[i] = bytes.Clone(v)
			}
		}
		return nil
	})
	return raws, err
}

// reserveLocked reserves aliases (keys theirs) in the overlay, over the
// overlay's values or else raws, setting out; b.aliases.mu is held.
func (b *Bolt) reserveLocked(aliases []Alias, order []int, keys, raws [][]byte, out []Alias, nowMS int64) error {
	o := b.aliases
	w := &aliasWriter{vals: make([]byte, 0, len(aliases)*aliasValueSize), retention: b.retention}
	for _, i := range order {
		raw, ok := o.get(keys[i]) // set since the read, or by an earlier alias of this call
		if !ok {
			raw = raws[i]
		}
		held, val, exp, err := w.next(aliases[i], raw, true, nowMS)
		if err != nil {
			return err
		}
		if val != nil {
			o.set(keys[i], val, exp)
		}
		out[i] = held
	}
	return nil
}

// aliasWriter puts the aliases of one write transaction. A fetch's commit
// puts about eight aliases an item, so what each put allocates counts: the
// look-ups share one cursor, the keys one buffer each (bbolt copies the
// keys it stores), and the values are cut from one arena (bbolt keeps a
// value, not a copy, until the commit, so no part of it is ever reused).
type aliasWriter struct {
	tx        *bolt.Tx
	bk, ex    *bolt.Bucket
	look      *bolt.Cursor
	over      *aliasOverlay
	key       []byte
	vals      []byte
	retention time.Duration
	// expiring are the keys written, by the hour they expire by, for the
	// expiry index (flushExpiry).
	expiring map[int64][]byte
}

func (b *Bolt) aliasWriter(tx *bolt.Tx, n int) (*aliasWriter, error) {
	bk, ex, err := aliasBuckets(tx)
	if err != nil {
		return nil, err
	}
	return &aliasWriter{tx: tx, bk: bk, ex: ex, look: bk.Cursor(), over: b.aliases, vals: make([]byte, 0, n*aliasValueSize), retention: b.retention}, nil
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
// does, and returns the alias held afterwards. An alias across feeds is
// staged for the store's overlay (bolt_aliasstage.go), logged by this
// transaction and in the overlay once it commits; a feed's own goes to
// the bucket.
func (w *aliasWriter) put(a Alias, reserve bool, nowMS int64) (Alias, error) {
	w.key = appendBoltAliasKey(w.key[:0], a.AliasFP)
	key := w.key
	if a.FeedID == "" {
		w.over.mu.Lock()
		defer w.over.mu.Unlock()
		raw, ok, err := w.over.current(w.tx, key)
		if err != nil {
			return Alias{}, err
		}
		if !ok {
			raw = w.stored(key)
		}
		held, val, exp, err := w.next(a, raw, reserve, nowMS)
		if err == nil && val != nil {
			w.over.stageSet(key, val, exp)
		}
		return held, err
	}
	raw := w.stored(key)
	held, val, exp, err := w.next(a, raw, reserve, nowMS)
	if err != nil || val == nil {
		return held, err
	}
	return held, w.write(key, raw, val, exp)
}

// stored is the bucket's value at key, nil if none.
func (w *aliasWriter) stored(key []byte) []byte {
	if k, v := w.look.Seek(key); bytes.Equal(k, key) {
		return v
	}
	return nil
}

// next works out what a put of a leaves over raw, the value held now (nil:
// none): the alias held afterwards, and the value to store with its
// expiry (val nil: raw stays as it is).
func (w *aliasWriter) next(a Alias, raw []byte, reserve bool, nowMS int64) (held Alias, val []byte, exp int64, err error) {
	var since int64
	if reserve {
		since = nowMS
	}
	if raw != nil {
		old, oldExp, err := boltAlias(a.AliasFP, raw)
		if err != nil {
			return Alias{}, nil, 0, err
		}
		if oldExp > nowMS {
			if a.FeedID == "" && old.Target != a.Target {
				return old, nil, 0, nil // across feeds, the first target keeps it
			}
			if a.FeedID == "" && !old.Since.IsZero() {
				since = ms(old.Since)
			}
		}
	}
	ttl := a.TTL
	if ttl <= 0 {
		ttl = w.retention
	}
	exp = nowMS + ttl.Milliseconds()
	a.Since, a.Found = fromMS(since), true
	// The stored form of aliasValue, with "|since" when reserved, and
	// "|expiry".
	n := len(a.Target.FeedID) + len(a.Target.ExternalID) + len(a.Type) + len(a.Extra) + 3 + 2*21
	val = w.value(n, func(b []byte) []byte {
		b = appendAliasValue(b, a)
		if since != 0 {
			b = strconv.AppendInt(append(b, '|'), since, 10)
		}
		return strconv.AppendInt(append(b, '|'), exp, 10)
	})
	if bytes.Equal(raw, val) {
		// Stored as it is (a fetch puts the aliases it reserved a moment
		// before, at the same time): a write would dirty the page anyway.
		w.vals = w.vals[:len(w.vals)-len(val)]
		return a, nil, 0, nil
	}
	return a, val, exp, nil
}

// write puts val (expiring at exp) at key in the bucket over raw, the
// value there before (nil: none). A new key is noted for the expiry
// index (flushExpiry); a key renewed keeps the entry it has, and the
// purge, which reads each value's own expiry, notes it again then. So
// renewals (every fetch of a feed that changed renews its aliases) write
// no entry.
func (w *aliasWriter) write(key, raw, val []byte, exp int64) error {
	if err := w.bk.Put(key, val); err != nil {
		return err
	}
	if raw == nil {
		w.note(key, exp)
	}
	return nil
}

// note adds key, expiring at exp, to the expiry index's next entries.
func (w *aliasWriter) note(key []byte, exp int64) {
	if w.expiring == nil {
		w.expiring = make(map[int64][]byte, 2)
	}
	h := expiryHour(exp)
	w.expiring[h] = append(binary.AppendUvarint(w.expiring[h], uint64(len(key))), key...)
}

// The expiry index ("aliasexp") holds entries "hour|0xFF|sequence" (the
// hour's end in ms, 8 bytes big-endian; the sequence 8 more), each the
// keys of aliases that expire by then, each key after its length
// (uvarint), up to expiryEntryKeys keys or expiryEntryBytes bytes (a
// value that fits a page): a few puts for a fetch's aliases, where an
// entry per alias cost a put each. Entries from before this form,
// "expiry ms|key" with an empty value, are read too.
const (
	expiryEntryKeys  = 128
	expiryEntryBytes = 3500
)

// expiryHour is the end of the hour exp falls in: the aliases of one
// entry expire by then (a purge finds them an hour late at most, and a
// look-up reads each value's own expiry).
func expiryHour(exp int64) int64 {
	const hour = int64(time.Hour / time.Millisecond)
	return (exp/hour + 1) * hour
}

// flushExpiry writes the expiry index's entries for the keys written.
func (w *aliasWriter) flushExpiry() error {
	for h, list := range w.expiring {
		for len(list) > 0 {
			end, n := 0, 0
			for end < len(list) && n < expiryEntryKeys {
				l, k := binary.Uvarint(list[end:])
				if n > 0 && end+k+int(l) > expiryEntryBytes {
					break
				}
				end += k + int(l)
				n++
			}
			seq, err := w.ex.NextSequence()
			if err != nil {
				return err
			}
			key := binary.BigEndian.AppendUint64(append(binary.BigEndian.AppendUint64(make([]byte, 0, 17), uint64(h)), 0xFF), seq)
			if err := w.ex.Put(key, list[:end:end]); err != nil {
				return err
			}
			list = list[end:]
		}
	}
	w.expiring = nil
	return nil
}

// purge deletes the aliases listed by the expiry index's entries that are
// due (a bounded number of them), each only if its value has expired. An
// alias renewed since it was noted is noted again, for the hour its value
// now expires by. The index is a hint (look-ups read each value's own
// expiry): an entry that cannot be read is deleted, with what it lists
// left in the bucket, rather than failing every write with aliases.
func (w *aliasWriter) purge(nowMS int64) error {
	c := w.ex.Cursor()
	limit := binary.BigEndian.AppendUint64(nil, uint64(nowMS))
	n := 0
	for k, v := c.First(); k != nil && n < aliasPurge && (len(k) < 8 || bytes.Compare(k[:8], limit) <= 0); k, v = c.First() {
		if err := w.purgeEntry(k, v, nowMS, &n); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return w.flushExpiry()
}

// purgeEntry purges the aliases one entry of the index lists, counting
// them in *n. A key too short for an hour, or a list that cannot be read,
// is not an entry either form writes: what it lists is left alone.
func (w *aliasWriter) purgeEntry(k, v []byte, nowMS int64, n *int) error {
	if len(k) < 8 {
		return nil
	}
	if len(v) == 0 {
		*n++ // an entry of the form before batches: one key
		return w.purgeAlias(k[8:], nowMS)
	}
	for len(v) > 0 {
		l, m := binary.Uvarint(v)
		if m <= 0 || uint64(len(v)-m) < l {
			return nil
		}
		if err := w.purgeAlias(v[m:m+int(l)], nowMS); err != nil {
			return err
		}
		*n++
		v = v[m+int(l):]
	}
	return nil
}

// purgeAlias deletes the alias at key if it has expired (or cannot be
// read), and notes it again if it was renewed.
func (w *aliasWriter) purgeAlias(key []byte, nowMS int64) error {
	v := w.bk.Get(key)
	if v == nil {
		return nil
	}
	if _, exp, err := splitAliasExp(v); err == nil && exp > nowMS {
		w.note(key, exp)
		return nil
	}
	return w.bk.Delete(key)
}
