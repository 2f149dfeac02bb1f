package dedupe

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestGroupCommitIsolatesFailures runs many writes at once, some failing:
// every good write is on disk, no failing write left anything, and each
// caller hears its own result.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = b.update(t.Context(), "test", func(tx *bolt.Tx) error {
				if err := tx.Bucket(bLeases).Put(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
					return err
				}
				if i%7 == 0 {
					return boom // after a write, which must not survive
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if want := i%7 == 0; errors.Is(err, boom) != want || (!want && err != nil) {
			t.Errorf("write %d: error %v, want boom %v", i, err, want)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.update(t.Context(), "late", func(*bolt.Tx) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("write after Close: %v, want errClosed", err)
	}
	// What callers were told is what the file holds after a reopen.
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.db.View(func(tx *bolt.Tx) error {
		for i := range n {
			got := tx.Bucket(bLeases).Get(fmt.Appendf(nil, "k%d", i)) != nil
			if want := i%7 != 0; got != want {
				t.Errorf("key %d on disk = %v, want %v", i, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteLater: a write that may wait is committed in the transaction
// of the next write that does not, on its own when none comes, and before
// the committer stops; each returns only once its transaction is durable.
func TestWriteLater(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bLeases); return err }); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{}, 16)
	// Held writes wait for company for longer than the test runs, so
	// that a held write is taken along by the next write however the
	// goroutines are scheduled.
	g := startGroupCommitter(db, time.Hour, func() { held <- struct{}{} }, nil)
	put := func(key string, id *int) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			*id = tx.ID()
			return tx.Bucket(bLeases).Put([]byte(key), []byte("v"))
		}
	}
	onDisk := func(key string) bool {
		var ok bool
		if err := db.View(func(tx *bolt.Tx) error { ok = tx.Bucket(bLeases).Get([]byte(key)) != nil; return nil }); err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// Held, then taken along by a write that does not wait.
	var laterTx, nowTx int
	laterDone := make(chan error, 1)
	go func() { laterDone <- g.writeCtx(context.Background(), put("later", &laterTx), true) }()
	<-held
	if onDisk("later") {
		t.Fatal("a held write is on disk before any commit")
	}
	if err := g.write(put("now", &nowTx)); err != nil {
		t.Fatal(err)
	}
	if err := <-laterDone; err != nil {
		t.Fatal(err)
	}
	if laterTx != nowTx {
		t.Errorf("held write committed in transaction %d, the next write in %d; want one transaction", laterTx, nowTx)
	}

	// Alone: committed once its wait is over (on a committer of its
	// own whose wait is short; nothing here depends on how short).
	aloneHeld := make(chan struct{}, 1)
	ga := startGroupCommitter(db, time.Millisecond, func() { aloneHeld <- struct{}{} }, nil)
	if err := ga.writeCtx(context.Background(), put("alone", new(int)), true); err != nil {
		t.Fatal(err)
	}
	ga.close()
	<-aloneHeld // it was held
	if !onDisk("alone") {
		t.Error("a write that waited alone is not on disk after it returned")
	}

	// Held when the committer stops: committed before it stops.
	var lastTx int
	lastDone := make(chan error, 1)
	go func() { lastDone <- g.writeCtx(context.Background(), put("last", &lastTx), true) }()
	<-held
	g.close()
	if err := <-lastDone; err != nil {
		t.Fatalf("held write at close: %v", err)
	}
	if !onDisk("last") {
		t.Error("a write held at close is not on disk")
	}
	if err := g.writeCtx(context.Background(), put("after", new(int)), true); !errors.Is(err, errClosed) {
		t.Errorf("write after close: %v, want errClosed", err)
	}
}

// TestGroupWriteGivenUp: a caller whose context ends stops waiting at once.
// A write not yet taken (the committer busy with another) is then never
// run; one already taken runs on and commits.
func TestGroupWriteGivenUp(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "store.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put := func(key string, started chan<- struct{}, release <-chan struct{}) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			if started != nil {
				close(started)
				<-release
			}
			return tx.Bucket(bLeases).Put([]byte(key), []byte("v"))
		}
	}
	stored := func(key string) bool {
		var ok bool
		if err := b.db.View(func(tx *bolt.Tx) error { ok = tx.Bucket(bLeases).Get([]byte(key)) != nil; return nil }); err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// The committer is held inside a write ("taken") whose caller gives up.
	started, release := make(chan struct{}), make(chan struct{})
	takenCtx, giveUpTaken := context.WithCancel(t.Context())
	takenDone := make(chan error, 1)
	go func() { takenDone <- b.update(takenCtx, "taken", put("taken", started, release)) }()
	<-started
	giveUpTaken()
	if err := <-takenDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("taken write given up: %v, want context.Canceled at once", err)
	}

	// Meanwhile another write waits to be taken; its caller gives up too.
	waitCtx, giveUpWaiting := context.WithCancel(t.Context())
	waitDone := make(chan error, 1)
	go func() { waitDone <- b.update(waitCtx, "waiting", put("waiting", nil, nil)) }()
	giveUpWaiting()
	if err := <-waitDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting write given up: %v, want context.Canceled at once", err)
	}

	close(release)
	// A write after both is committed after the taken one.
	if err := b.update(t.Context(), "after", put("after", nil, nil)); err != nil {
		t.Fatal(err)
	}
	if !stored("taken") || !stored("after") {
		t.Errorf("taken write stored %v, later write %v; want both", stored("taken"), stored("after"))
	}
	if stored("waiting") {
		t.Error("a write given up before it was taken was run")
	}
}
