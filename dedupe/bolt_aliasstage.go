package dedupe

import (
	"errors"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// What a write transaction changes of the aliases in memory. A put across
// feeds (a fetch's commit renewing its aliases) is staged for its
// transaction, seen by the later puts of that transaction only, logged
// by it, and applied to the overlay only once it commits: a transaction
// rolled back (a failing write in its group, a stopped step, a full disk)
// leaves nothing in memory that the next commit could log and the next
// open replay. Reservations are not transactional: they go to the
// overlay at once and are logged by the next commit (bolt_aliaslog.go).
//
// A reservation made while a transaction that staged the same key runs
// did not see the staged value; when it changed the key, the reservation
// stands and the put is dropped, as if it had come after the reservation
// (across feeds, the first target keeps an alias).

// stageKeepMax is the most staged aliases whose map the next transaction
// reuses; a larger one is dropped. Commits stage a feed's items, tens.
const stageKeepMax = 4096

var errNotBegun = errors.New("alias write outside a transaction of the committer")

type stagedAlias struct {
	val []byte
	exp int64
	// base is the overlay's gen for the key when first staged (0: none).
	// Another one later means a reservation set the key meanwhile.
	base uint64
}

// aliasStage is the stage of the write transaction tx.
type aliasStage struct {
	tx *bolt.Tx
	m  map[string]stagedAlias
	// merged are the aliases a merge of tx took, with their gen: they are
	// in the bucket with it, so they need no log record.
	merged map[string]overlayAlias
}

// begin starts tx's stage (txHooks), dropping what a transaction rolled
// back left.
func (o *aliasOverlay) begin(tx *bolt.Tx) {
	o.mu.Lock()
	// A cleared map keeps its size: one large stage (a first sight of a
	// large feed) would otherwise hold its slots for the process's life.
	if len(o.stage.m) > stageKeepMax {
		o.stage.m = nil
	} else {
		clear(o.stage.m)
	}
	o.stage.tx, o.stage.merged = tx, nil
	o.mu.Unlock()
}

// current is the value a write of tx sees at key: staged by tx, else the
// overlay's; o.mu is held.
func (o *aliasOverlay) current(tx *bolt.Tx, key []byte) ([]byte, bool, error) {
	if o.stage.tx != tx {
		return nil, false, errNotBegun
	}
	if s, ok := o.stage.m[string(key)]; ok {
		return s.val, true, nil
	}
	v, ok := o.get(key)
	return v, ok, nil
}

// stageSet stages val at key for tx (current was called); o.mu is held.
// val is kept, not copied.
func (o *aliasOverlay) stageSet(key, val []byte, exp int64) {
	if o.stage.m == nil {
		o.stage.m = map[string]stagedAlias{}
	}
	k := string(key)
	s, ok := o.stage.m[k]
	if !ok {
		s.base = o.m[k].gen
	}
	s.val, s.exp = val, exp
	o.stage.m[k] = s
}

// finish (txHooks) appends to the log in tx the aliases reserved since
// the last commit and those tx staged, at the end of every write
// transaction, and once tx commits applies the staged ones to the overlay
// and takes the reserved ones off unlogged.
func (o *aliasOverlay) finish(tx *bolt.Tx) error {
	o.mu.Lock()
	if o.stage.tx != tx {
		o.mu.Unlock()
		return errNotBegun
	}
	n := len(o.unlogged)
	var rec logRecord
	for _, k := range o.unlogged {
		a, ok := o.m[k]
		// A key merged since it was set is in the bucket, and out of the
		// overlay (or will be once tx commits, if tx merged it): there is
		// nothing to log for it.
		if !ok || o.stage.merged[k].gen == a.gen {
			continue
		}
		rec.add(k, a.val)
	}
	// After the reserved: a key reserved before it was staged holds the
	// staged value once tx commits, and a replay takes the last.
	for k, s := range o.stage.m {
		if o.m[k].gen != s.base {
			delete(o.stage.m, k) // reserved meanwhile: the reservation stands
			continue
		}
		rec.add(k, s.val)
	}
	staged := len(o.stage.m) > 0
	o.mu.Unlock()
	if o.afterFinish != nil {
		o.afterFinish()
	}
	if n == 0 && !staged {
		return nil
	}
	if len(rec.parts) > 0 {
		lb, err := tx.CreateBucketIfNotExists(bAliasLog)
		if err != nil {
			return err
		}
		dense(lb)
		for _, part := range rec.parts {
			seq, err := lb.NextSequence()
			if err != nil {
				return err
			}
			if err := lb.Put(u64(int64(seq)), part); err != nil {
				return err
			}
		}
	}
	// This runs once the commit is durable, inside the committer's
	// Update, so before the committer begins another transaction (bbolt
	// runs it after releasing the write lock: another writer of the file,
	// such as the history, may begin one meanwhile, but it touches
	// neither unlogged nor the stage). Only this handler takes keys off
	// unlogged and only the committer's next begin replaces the stage: the
	// first n keys of unlogged are still the ones logged, and the stage is
	// tx's. A merge of tx registered its own before, so it has already
	// taken what it merged out of the overlay.
	tx.OnCommit(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.unlogged = slices.Delete(o.unlogged, 0, n)
		for k, s := range o.stage.m {
			if a, ok := o.m[k]; ok && a.gen != s.base {
				continue // reserved since finish logged it: see above
			}
			o.gen++
			o.m[k] = overlayAlias{val: s.val, exp: s.exp, gen: o.gen}
		}
		o.logged += rec.size()
	})
	return nil
}
