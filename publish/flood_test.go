package publish_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// plainStore is a store that is no AliasCommitter: the publisher commits
// with Commit and sets the notes after it.
type plainStore interface {
	dedupe.Store
	dedupe.AliasIndex
}

// commitFailsOnce is a store whose next commit fails, before writing
// anything, once armed.
type commitFailsOnce struct {
	plainStore
	armed atomic.Bool
}

var errCommit = errors.New("injected commit failure")

func (s *commitFailsOnce) Commit(ctx context.Context, feedID string, changes []dedupe.Change, v *dedupe.Validators, now time.Time) ([]dedupe.Outcome, error) {
	if s.armed.CompareAndSwap(true, false) {
		return nil, errCommit
	}
	return s.plainStore.Commit(ctx, feedID, changes, v, now)
}

// committerFailsOnce is commitFailsOnce with CommitAliases.
type committerFailsOnce struct {
	*commitFailsOnce
	ac dedupe.AliasCommitter
}

func (s committerFailsOnce) CommitAliases(ctx context.Context, feedID string, changes []dedupe.Change, v *dedupe.Validators, as []dedupe.Alias, notes []dedupe.NoteWrite, now time.Time) ([]dedupe.Outcome, error) {
	if s.armed.CompareAndSwap(true, false) {
		return nil, errCommit
	}
	return s.ac.CommitAliases(ctx, feedID, changes, v, as, notes, now)
}

// TestFloodGuardAfterFailedCommit: a known feed brings a burst of new
// items, all newer than anything it showed, and their commit fails. The
// poll after is no flood: the newest date seen is stored with the commit,
// so the failed one left it where it was, and nothing is held; it is
// stored once the commit goes through. With repost matching and without,
// through CommitAliases (the notes go with the commit) and through a
// store without it (they follow the commit).
func TestFloodGuardAfterFailedCommit(t *testing.T) {
	for _, kind := range []storeKind{onRedis, onBolt} {
		for _, matching := range []bool{true, false} {
			for _, committer := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/matching=%v/committer=%v", kind, matching, committer), func(t *testing.T) {
					t.Parallel()
					e := newEnv(t, kind, sandbox.Faults{})
					real := e.store
					fails := &commitFailsOnce{plainStore: real.(plainStore)}
					e.store = fails
					if committer {
						e.store = committerFailsOnce{fails, real.(dedupe.AliasCommitter)}
					}
					if _, ok := e.store.(dedupe.AliasCommitter); ok != committer {
						t.Fatalf("the store is an AliasCommitter: %v; want %v", ok, committer)
					}
					p := e.publisher(nil)
					o := publish.FeedOptions{InitialItems: 100, Reposts: publish.RepostOptions{URL: matching, FloodMax: 25}}
					ctx := t.Context()
					first := []transform.Payload{story("fl", 0, "first", day0)}
					e.accept(p, "fl", first, o)

					burst := append([]transform.Payload(nil), first...)
					for i := 1; i <= 30; i++ {
						burst = append(burst, story("fl", i, fmt.Sprint("burst ", i), day0.Add(time.Duration(i)*time.Hour)))
					}
					fails.armed.Store(true)
					if _, err := p.Accept(ctx, "fl", burst, dedupe.Validators{ETag: `"2"`}, o); !errors.Is(err, errCommit) {
						t.Fatalf("Accept with a failing commit: %v; want the injected failure", err)
					}
					c, err := p.Accept(ctx, "fl", burst, dedupe.Validators{ETag: `"2"`}, o)
					if err != nil {
						t.Fatal(err)
					}
					if c.Held != 0 || c.New != 30 {
						t.Errorf("the poll after the failed commit: %+v; want 30 new, none held", c)
					}
					raw, ok, err := e.store.Note(ctx, "fl", "newest")
					want, _ := day0.Add(30 * time.Hour).MarshalText()
					if err != nil || !ok || string(raw) != string(want) {
						t.Errorf("newest date note = %q, %v, %v; want %s", raw, ok, err, want)
					}
				})
			}
		}
	}
}
