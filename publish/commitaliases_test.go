package publish_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// aliasesNotStored is the Redis store whose CommitAliases commits the
// changes and fails to store the aliases.
type aliasesNotStored struct {
	*dedupe.Redis
}

var errAliasWrite = errors.New("injected alias write failure")

func (s aliasesNotStored) CommitAliases(ctx context.Context, feedID string, changes []dedupe.Change, v *dedupe.Validators, _ []dedupe.Alias, notes []dedupe.NoteWrite, now time.Time) ([]dedupe.Outcome, error) {
	out, err := s.Commit(ctx, feedID, changes, v, now)
	if err != nil {
		return out, err
	}
	for _, n := range notes {
		if err := s.SetNote(ctx, feedID, n.Name, n.Data); err != nil {
			return out, err
		}
	}
	return out, fmt.Errorf("commit feed %q: %w: %w", feedID, dedupe.ErrAliasesNotStored, errAliasWrite)
}

// errorsHeard is a store health that keeps the errors it hears.
type errorsHeard struct {
	mu   sync.Mutex
	errs []error
}

func (h *errorsHeard) Observe(err error) {
	if err != nil {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	}
}

func (h *errorsHeard) Up() bool                   { return true }
func (h *errorsHeard) Wait(context.Context) error { return nil }

// TestAliasesNotStoredCounted: when a commit's aliases fail to be stored
// (the commit itself went through), the failure counts as a store error
// of op aliases, as when they were stored by a call of their own, and
// the store's health hears of it; the items are still queued.
func TestAliasesNotStoredCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	e.store = aliasesNotStored{e.store.(*dedupe.Redis)}
	reg := prometheus.NewPedanticRegistry()
	health := &errorsHeard{}
	p := e.publisher(func(o *publish.Options) {
		o.Registerer = reg
		o.Health = health
	})
	c := e.accept(p, "al", stories("al", 3), publish.FeedOptions{InitialItems: 10, Reposts: publish.RepostOptions{URL: true}})
	if c.New != 3 {
		t.Fatalf("counts %+v; want 3 new", c)
	}
	if n := metricValue(t, reg, "feedworker_store_errors_total", map[string]string{"op": "aliases"}); n != 1 {
		t.Errorf("store errors of op aliases = %v; want 1", n)
	}
	health.mu.Lock()
	defer health.mu.Unlock()
	if !slices.ContainsFunc(health.errs, func(err error) bool { return errors.Is(err, errAliasWrite) }) {
		t.Errorf("the store's health heard %v; want the alias write's failure", health.errs)
	}
}
