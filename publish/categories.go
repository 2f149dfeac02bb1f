package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// categoryLeaseTTL bounds how long one process may hold the right to
// create a category name; creation is one request.
const categoryLeaseTTL = 30 * time.Second

// errBusy reports a category another process is creating right now.
var errBusy = errors.New("category being created by another worker")

// categories resolves category names to ids through the API. Names match
// the service's descriptions case-insensitively, ignoring surrounding
// space; when the service has the same name twice, the lowest id wins.
// The list is cached and fetched again on a miss, at most once per
// CategoryTTL unless the feed may create categories.
type categories struct {
	p *Publisher

	// sem serializes resolution, so one process creates a name once; a
	// channel rather than a mutex so that waiting for it ends with the
	// send's context: a claimed item must not queue here past its claim.
	sem    chan struct{}
	byName map[string]int64
	loaded time.Time
}

func normName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func (c *categories) reload(ctx context.Context) error {
	list, err := c.p.api.Categories(ctx)
	if err != nil {
		return fmt.Errorf("list categories: %w", err)
	}
	m := make(map[string]int64, len(list))
	for _, cat := range list {
		n := normName(cat.Name)
		if old, ok := m[n]; !ok || cat.ID < old {
			m[n] = cat.ID
		}
	}
	c.byName, c.loaded = m, time.Now()
	return nil
}

// resolve returns the ids of names. Unknown names are created when create
// is set, and otherwise dropped with a warning. An error means the item
// should be retried later.
func (c *categories) resolve(ctx context.Context, log *slog.Logger, names []string, create bool) ([]int64, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("resolve categories: %w: %w", errNotSent, ctx.Err())
	}
	defer func() { <-c.sem }()
	var ids []int64
	var missing []string
	lookup := func() {
		ids, missing = ids[:0], missing[:0]
		for _, name := range names {
			n := normName(name)
			if n == "" {
				continue
			}
			if id, ok := c.byName[n]; ok {
				ids = append(ids, id)
			} else {
				missing = append(missing, name)
			}
		}
	}
	lookup()
	if len(missing) > 0 && (c.byName == nil || create || time.Since(c.loaded) >= c.p.o.CategoryTTL) {
		if err := c.reload(ctx); err != nil {
			return nil, err
		}
		lookup()
	}
	for _, name := range missing {
		if !create {
			log.Warn("unknown category dropped; set create_categories to create it", "category", name)
			continue
		}
		id, err := c.create(ctx, log, name)
		if err != nil {
			return nil, err
		}
		if id != 0 {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// create makes one category, holding a store lease on its name so that
// two processes do not both create it. It returns 0 when the service
// refused the name for good.
func (c *categories) create(ctx context.Context, log *slog.Logger, name string) (int64, error) {
	lease := "category:" + normName(name)
	ok, err := c.p.store.AcquireLease(ctx, lease, c.p.o.Owner, categoryLeaseTTL)
	if err != nil {
		return 0, fmt.Errorf("create category %q: %w", name, err)
	}
	if !ok {
		return 0, fmt.Errorf("create category %q: %w", name, errBusy)
	}
	defer func() {
		if err := c.p.store.ReleaseLease(context.WithoutCancel(ctx), lease, c.p.o.Owner); err != nil {
			log.Warn("releasing a category lease failed; it expires by itself", "category", name, "cause", err)
		}
	}()
	// Another process may have created it before we got the lease.
	if err := c.reload(ctx); err != nil {
		return 0, err
	}
	if id, ok := c.byName[normName(name)]; ok {
		return id, nil
	}
	cat, err := c.p.api.CreateCategory(ctx, strings.TrimSpace(name))
	if err != nil {
		if permanent(err) {
			log.Warn("category refused by the service; dropped", "category", name, "cause", err)
			return 0, nil
		}
		return 0, fmt.Errorf("create category %q: %w", name, err)
	}
	c.byName[normName(name)] = cat.ID
	log.Info("category created", "category", name, "category_id", cat.ID)
	return cat.ID, nil
}
