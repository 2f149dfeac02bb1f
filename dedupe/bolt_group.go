package dedupe

import (
	"context"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit. Every write of the bbolt store goes through one committer
// goroutine: it takes the first waiting write, then every other write
// already waiting (up to maxGroup), runs them in one transaction and
// commits once, with one fsync. Writes that arrive while a commit is on
// disk wait for the next one, so a lone write waits for nothing and many
// concurrent ones (a pass polling 32 feeds, 16 senders settling) share
// the cost of a commit. Nobody hears back before the commit is durable:
// what a caller is told happened has happened on disk.
//
// Each write stays atomic: if one fails, the whole group is rolled back
// and each write of it runs again in its own transaction, so a failing
// write fails alone (bbolt's DB.Batch does the same; its fixed 10ms wait
// for company would slow a lone write, this does not). A write function
// may therefore run twice and must set its results afresh each time.

// maxGroup bounds the writes of one transaction, so that one slow group
// does not hold the next for long.
const maxGroup = 512

// errClosed is returned by writes after Close.
var errClosed = errors.New("store closed")

type groupWrite struct {
	fn   func(tx *bolt.Tx) error
	err  error
	done chan struct{}
	// later: the write may wait for company (see writeCtx).
	later bool
}

// groupCommitter runs writes in shared transactions until quit is closed.
type groupCommitter struct {
	db      *bolt.DB
	in      chan *groupWrite // unbuffered: a send succeeds only when taken
	quit    chan struct{}
	stopped chan struct{}
	// linger is how long a held write waits for company (laterLinger;
	// tests set it so that nothing depends on the scheduler).
	linger time.Duration
	// onHold, set by tests only (before the loop starts), is called when
	// a write is held for company.
	onHold func()
	// hooks, if set, run in every transaction (see txHooks).
	hooks txHooks
}

// txHooks run in every write transaction of the committer: begin before
// its writes, finish after them. The store stages there what a
// transaction changes of the aliases in memory, and logs it with what
// was reserved meanwhile, so that every commit makes durable what its
// writes may depend on (bolt_aliasstage.go). A transaction rolled back
// (a group retried write by write) is begun afresh.
type txHooks interface {
	begin(tx *bolt.Tx)
	finish(tx *bolt.Tx) error
}

func newGroupCommitter(db *bolt.DB, hooks txHooks) *groupCommitter {
	return startGroupCommitter(db, laterLinger, nil, hooks)
}

func startGroupCommitter(db *bolt.DB, linger time.Duration, onHold func(), hooks txHooks) *groupCommitter {
	g := &groupCommitter{db: db, in: make(chan *groupWrite), quit: make(chan struct{}), stopped: make(chan struct{}), linger: linger, onHold: onHold, hooks: hooks}
	go g.loop()
	return g
}

// write runs fn in a write transaction, shared with other writes waiting
// at the same time, and returns once the transaction is durable.
func (g *groupCommitter) write(fn func(tx *bolt.Tx) error) error {
	return g.writeCtx(context.Background(), fn, false)
}

// writeCtx is write for a caller that stops waiting when ctx ends, with
// ctx's error: a write not yet taken is then never run, and one taken runs
// on and may commit (a caller treats such an error as "maybe applied").
// The caller's goroutine waits itself, with no goroutine started per
// write to wait in its place.
//
// With later, the write is one nobody waits on to go on (an outcome whose
// sender has moved on): it is held up to laterLinger for the next write
// that does not wait, and committed in that one's transaction, rather
// than paying a commit and its fsyncs of its own. It still returns only
// once durable.
func (g *groupCommitter) writeCtx(ctx context.Context, fn func(tx *bolt.Tx) error, later bool) error {
	w := &groupWrite{fn: fn, done: make(chan struct{}), later: later}
	select {
	case g.in <- w:
	case <-g.stopped:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		select {
		case <-w.done: // ended as ctx did: its outcome is known
			return w.err
		default:
			return ctx.Err()
		}
	}
}

// close stops the committer after the group in progress.
func (g *groupCommitter) close() {
	close(g.quit)
	<-g.stopped
}

// laterLinger bounds how long a write that may wait (writeCtx, later) waits
// for company: long enough for the publisher's next claim, a few
// milliseconds away while it delivers, to take it along.
const laterLinger = 20 * time.Millisecond

func (g *groupCommitter) loop() {
	defer close(g.stopped)
	var held []*groupWrite // writes that may wait, waiting for company
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var first *groupWrite
		select {
		case first = <-g.in:
		case <-linger.C:
		case <-g.quit:
			if len(held) > 0 {
				g.commit(held)
			}
			return
		}
		if first != nil && first.later && len(held)+1 < maxGroup {
			if len(held) == 0 {
				linger.Reset(g.linger)
			}
			held = append(held, first)
			if g.onHold != nil {
				g.onHold()
			}
			continue
		}
		linger.Stop()
		group := held
		held = nil
		if first != nil {
			group = append(group, first)
		}
		if len(group) == 0 {
			continue
		}
	more:
		for len(group) < maxGroup {
			select {
			case w := <-g.in:
				group = append(group, w)
			default:
				break more
			}
		}
		g.commit(group)
	}
}

func (g *groupCommitter) commit(group []*groupWrite) {
	if len(group) > 1 {
		err := g.db.Update(func(tx *bolt.Tx) error {
			g.beginTx(tx)
			for _, w := range group {
				if err := w.fn(tx); err != nil {
					return err
				}
			}
			return g.finishTx(tx)
		})
		if err == nil {
			for _, w := range group {
				close(w.done)
			}
			return
		}
		// A write failed, or the commit did (a disk error): nothing of
		// the group is on disk. Each write runs again alone, so a failing
		// write fails alone and a passing fault costs a retry.
	}
	for _, w := range group {
		w.err = g.db.Update(func(tx *bolt.Tx) error {
			g.beginTx(tx)
			if err := w.fn(tx); err != nil {
				return err
			}
			return g.finishTx(tx)
		})
		close(w.done)
	}
}

func (g *groupCommitter) beginTx(tx *bolt.Tx) {
	if g.hooks != nil {
		g.hooks.begin(tx)
	}
}

func (g *groupCommitter) finishTx(tx *bolt.Tx) error {
	if g.hooks == nil {
		return nil
	}
	return g.hooks.finish(tx)
}
