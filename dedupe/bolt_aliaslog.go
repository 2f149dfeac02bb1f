package dedupe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Aliases across feeds in memory, logged. A fetch reserves the aliases
// across feeds of its new items before its commit, and their keys are
// fingerprints: each lands in its own random leaf of the aliases bucket,
// and written there one fetch at a time they were most of the pages the
// store wrote (docs/PERFORMANCE.md). So they are kept in an overlay in
// memory, which every look-up, reservation and put across feeds consults
// first, and each commit appends those changed since the last one to the
// "aliaslog" bucket: a single append, in the transaction of whichever
// write commits next (groupCommitter.finish). A write that depends on a
// reservation (the reserving fetch's commit, another feed's item made a
// merge job by it) commits after it was made, so never without it; and
// nothing is reported reserved to a caller that a crash could take back
// and that anything durable depends on. Once aliasMergeAt aliases wait,
// they are merged into the bucket in key order in one transaction, which
// also empties the log; so is what waits at Close, and at open whatever
// a crash left in the log.
//
// The store is one process (bbolt locks the file), so the overlay in its
// memory is the whole truth for reservations, as Redis is for its store.

var bAliasLog = []byte("aliaslog")

// aliasMergeAt is how many aliases wait in the overlay before they are
// merged into the bucket (Bolt.mergeAt; tests set it lower). A merge
// writes each leaf its aliases land in once, however many land there, so
// the more at once, the fewer pages an alias; 16,384 of about 150 bytes
// (and the map's own) are a few megabytes.
const aliasMergeAt = 16384

// aliasMergeLogBytes is how many bytes of log records committed since the
// last merge make a merge due (Bolt.mergeLogBytes; tests set it lower).
// Every commit that renews a feed's aliases logs them again: 100 feeds of
// 50 items each, every 5 minutes, logged 250 MB a day that only a merge
// deletes. A merge of the few thousand keys renewed is cheap next to that.
const aliasMergeLogBytes = 4 << 20

type overlayAlias struct {
	val []byte // the stored form: "value|expiry ms"
	exp int64
	gen uint64 // changed at each set, so a merge knows what changed since
}

// aliasOverlay holds the aliases across feeds not yet merged into the
// bucket.
type aliasOverlay struct {
	mu sync.Mutex
	m  map[string]overlayAlias
	// unlogged are the keys reserved since the last commit's log record,
	// in order (a key set twice is there twice, and logged as it is then).
	unlogged []string
	gen      uint64
	// stage is what the write transaction under way changed of m, applied
	// to m only once it commits (bolt_aliasstage.go). The committer runs
	// one write transaction at a time.
	stage aliasStage
	// logged is the size of the log records committed since the last
	// merge: past mergeLogBytes, a merge is due however few keys wait.
	logged int
	// merges counts the merges committed, so that a reservation that read
	// the bucket without mu knows whether to read it again.
	merges uint64
	// merging: a merge's write is under way; mergeDone is signalled (on
	// mu) when it ends.
	merging   bool
	mergeDone *sync.Cond
	// afterFinish, set by tests only, runs in the committer after finish
	// has logged tx's stage, before tx commits.
	afterFinish func()
}

func newAliasOverlay() *aliasOverlay {
	o := &aliasOverlay{m: map[string]overlayAlias{}}
	o.mergeDone = sync.NewCond(&o.mu)
	return o
}

// get returns the value held at key; o.mu is held.
func (o *aliasOverlay) get(key []byte) ([]byte, bool) {
	a, ok := o.m[string(key)]
	return a.val, ok
}

// set holds val at key until it is merged, and until logged among the
// unlogged (a reservation); o.mu is held. val is kept, not copied.
func (o *aliasOverlay) set(key, val []byte, exp int64) {
	o.gen++
	k := string(key)
	o.m[k] = overlayAlias{val: val, exp: exp, gen: o.gen}
	o.unlogged = append(o.unlogged, k)
}

// lookup fills out[i] for each fingerprint across feeds the overlay holds
// (live or expired), and reports which.
func (o *aliasOverlay) lookup(fps []AliasFP, out []Alias, nowMS int64) ([]bool, error) {
	in := make([]bool, len(fps))
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) == 0 {
		return in, nil
	}
	var key []byte
	for i, f := range fps {
		if f.FeedID != "" {
			continue
		}
		key = appendBoltAliasKey(key[:0], f)
		a, ok := o.m[string(key)]
		if !ok {
			continue
		}
		in[i] = true
		if a.exp <= nowMS {
			continue
		}
		al, _, err := boltAlias(f, a.val)
		if err != nil {
			return nil, err
		}
		out[i] = al
	}
	return in, nil
}

// appendLogEntry appends key and val, each preceded by its length.
func appendLogEntry(b []byte, key string, val []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(val)))
	return append(b, val...)
}

// logPartBytes bounds a part of a commit's log record. The log is
// appended to, so each commit rewrites the bucket's last leaf: a record
// of one value (tens of KB for a pass's commit of 32 feeds) shares that
// leaf with the one or two before it, which were written again with it,
// four times the log's size in all. Parts of a few to a page are written
// about once.
const logPartBytes = 1024

// logRecord is one commit's log record, in parts of whole entries, each
// a record of its own key: a replay reads them as it reads records.
type logRecord struct {
	parts [][]byte
}

// add appends an entry of key and val.
func (r *logRecord) add(key string, val []byte) {
	n := len(r.parts)
	if n == 0 || len(r.parts[n-1]) >= logPartBytes {
		r.parts = append(r.parts, make([]byte, 0, logPartBytes+len(key)+len(val)+2*binary.MaxVarintLen64))
		n++
	}
	r.parts[n-1] = appendLogEntry(r.parts[n-1], key, val)
}

// size is the record's bytes, its parts' together.
func (r *logRecord) size() int {
	n := 0
	for _, p := range r.parts {
		n += len(p)
	}
	return n
}

// readLogEntries calls fn for each key and value of a log record, in
// order.
func readLogEntries(rec []byte, fn func(key, val []byte) error) error {
	for len(rec) > 0 {
		var kv [2][]byte
		for j := range kv {
			n, w := binary.Uvarint(rec)
			if w <= 0 || uint64(len(rec)-w) < n {
				return errors.New("malformed alias log record")
			}
			kv[j], rec = rec[w:w+int(n)], rec[w+int(n):]
		}
		if err := fn(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// mergeAliasesIfDue merges the overlay into the bucket once aliasMergeAt
// aliases wait, or once mergeLogBytes of log records were committed since
// the last merge (commits renew the same aliases over and over: each
// renewal is logged again, never more keys), unless a merge is under way.
func (b *Bolt) mergeAliasesIfDue(ctx context.Context) error {
	o := b.aliases
	o.mu.Lock()
	due := (len(o.m) >= b.mergeAt || o.logged >= b.mergeLogBytes) && !o.merging
	if due {
		o.merging = true
	}
	o.mu.Unlock()
	if !due {
		return nil
	}
	return b.mergeAliases(ctx)
}

// mergeAliasesAtClose waits for a merge under way, then merges what waits.
func (b *Bolt) mergeAliasesAtClose() error {
	o := b.aliases
	o.mu.Lock()
	for o.merging {
		if b.beforeMergeWait != nil {
			b.beforeMergeWait()
		}
		o.mergeDone.Wait()
	}
	o.merging = true
	o.mu.Unlock()
	return b.mergeAliases(context.Background())
}

// mergeAliases writes every alias of the overlay into the bucket, in one
// transaction that also empties the log of what it merged. The caller set
// o.merging; it is cleared when the merge's write has ended, even if ctx
// ends first (Close waits for it).
func (b *Bolt) mergeAliases(ctx context.Context) error {
	o := b.aliases
	done := func() {
		o.mu.Lock()
		o.merging = false
		o.mergeDone.Broadcast()
		o.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		done()
		return fmt.Errorf("bolt merge aliases: %w", err)
	}
	err := b.bounded(ctx, 0, func() error {
		defer done()
		return b.group.write(b.mergeWrite)
	})
	if err != nil {
		return fmt.Errorf("bolt merge aliases: %w", keepErrno(err))
	}
	return nil
}

// mergeWrite is the merge's write (mergeAliases).
func (b *Bolt) mergeWrite(tx *bolt.Tx) error {
	o := b.aliases
	o.mu.Lock()
	if o.stage.tx != tx {
		o.mu.Unlock()
		return errNotBegun
	}
	if len(o.m) == 0 {
		o.mu.Unlock()
		return nil
	}
	taken := make(map[string]overlayAlias, len(o.m))
	for k, a := range o.m {
		taken[k] = a
	}
	// The log record of tx (finish) leaves out what is merged here.
	o.stage.merged = taken
	o.mu.Unlock()
	// Every log record there now holds only aliases taken here (or
	// older values of them): each was set, so in the overlay, before it
	// was logged, and leaves the overlay only by a merge.
	var upTo uint64
	if lb := tx.Bucket(bAliasLog); lb != nil {
		upTo = lb.Sequence()
	}
	if err := b.mergeTx(tx, taken, upTo); err != nil {
		return err
	}
	// Registered before finish's, so it runs first: finish's counts
	// the record of tx, written after upTo.
	tx.OnCommit(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		for k, a := range taken {
			if o.m[k].gen == a.gen { // not set again since
				delete(o.m, k)
			}
		}
		o.logged = 0
		o.merges++
	})
	return nil
}

// mergeTx puts aliases into the bucket, in key order, and deletes the log
// records up to upTo.
func (b *Bolt) mergeTx(tx *bolt.Tx, aliases map[string]overlayAlias, upTo uint64) error {
	w, err := b.aliasWriter(tx, 0)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(aliases))
	for k := range aliases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key := []byte(k)
		if err := w.write(key, w.stored(key), aliases[k].val, aliases[k].exp); err != nil {
			return err
		}
	}
	if err := w.flushExpiry(); err != nil {
		return err
	}
	lb := tx.Bucket(bAliasLog)
	if lb == nil {
		return nil
	}
	c := lb.Cursor()
	for k, _ := c.First(); k != nil && uint64(fromU64(k)) <= upTo; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// replayAliasLog merges into the bucket what a process that ended
// without merging left in the log, in tx (at open).
func (b *Bolt) replayAliasLog(tx *bolt.Tx) error {
	lb := tx.Bucket(bAliasLog)
	if lb == nil {
		return nil
	}
	aliases := map[string]overlayAlias{}
	err := lb.ForEach(func(_, rec []byte) error {
		return readLogEntries(rec, func(key, val []byte) error {
			_, exp, err := splitAliasExp(val)
			if err != nil {
				return fmt.Errorf("alias log %q: %w", key, err)
			}
			// Later records hold later values.
			aliases[string(key)] = overlayAlias{val: bytes.Clone(val), exp: exp}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return b.mergeTx(tx, aliases, lb.Sequence())
}
