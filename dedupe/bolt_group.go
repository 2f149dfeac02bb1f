package dedupe

import (
	"errors"

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
}

// groupCommitter runs writes in shared transactions until quit is closed.
type groupCommitter struct {
	db      *bolt.DB
	in      chan *groupWrite // unbuffered: a send succeeds only when taken
	quit    chan struct{}
	stopped chan struct{}
}

func newGroupCommitter(db *bolt.DB) *groupCommitter {
	g := &groupCommitter{db: db, in: make(chan *groupWrite), quit: make(chan struct{}), stopped: make(chan struct{})}
	go g.loop()
	return g
}

// write runs fn in a write transaction, shared with other writes waiting
// at the same time, and returns once the transaction is durable. It waits
// for the commit even if the caller's context ends meanwhile: a write
// handed over may be applied, and its caller must know whether it was.
func (g *groupCommitter) write(fn func(tx *bolt.Tx) error) error {
	w := &groupWrite{fn: fn, done: make(chan struct{})}
	select {
	case g.in <- w:
	case <-g.stopped:
		return errClosed
	}
	<-w.done
	return w.err
}

// close stops the committer after the group in progress.
func (g *groupCommitter) close() {
	close(g.quit)
	<-g.stopped
}

func (g *groupCommitter) loop() {
	defer close(g.stopped)
	for {
		var first *groupWrite
		select {
		case first = <-g.in:
		case <-g.quit:
			return
		}
		group := []*groupWrite{first}
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
			for _, w := range group {
				if err := w.fn(tx); err != nil {
					return err
				}
			}
			return nil
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
		w.err = g.db.Update(w.fn)
		close(w.done)
	}
}
