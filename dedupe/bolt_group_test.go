package dedupe

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

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
