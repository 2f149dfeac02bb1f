package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedworker/feedworker/acs"
)

// BatchFinder is an [API] that looks many items up at once, as reconcile
// mode needs (see the package doc). [ACS] is one; with an API that is not,
// the publisher calls Find once per item.
type BatchFinder interface {
	// FindMany looks content up by external id: found holds the ids that
	// exist (the oldest content when several share one). n counts the
	// requests it made. It never guesses: when it cannot tell, it fails
	// (with [ErrUnverifiable] when the content is too large to scan).
	FindMany(ctx context.Context, externalIDs []string) (found map[string]Found, n Lookups, err error)
}

// Lookups counts the GET requests of a look-up.
type Lookups struct {
	// Filtered are requests with an external_id filter: one per up to
	// [FindBatch] ids (a second page only when copies overflow the first).
	Filtered int
	// Scanned are pages of 100 read without a filter, when the service
	// refuses or ignores the filter.
	Scanned int
}

// FindBatch is how many external ids one filtered request asks for (the
// spec's default page size, so one page holds the answer).
const FindBatch = acs.DefaultPageSize

var _ BatchFinder = (*ACS)(nil)

// FindMany implements [BatchFinder] with GET /v3/content and filters_json
// {"external_id": {"in": "a,b,c"}}, [FindBatch] ids per request. When the
// service refuses the filter (400) or ignores it (the answer holds ids not
// asked for), it reads the content pages once for every id left, within
// the budgets of [ACS.Find]'s scan, and remembers not to filter again.
// An id containing a comma, which an in list cannot carry, is looked up
// alone with [ACS.Find].
func (a *ACS) FindMany(ctx context.Context, externalIDs []string) (map[string]Found, Lookups, error) {
	var n Lookups
	found := make(map[string]Found)
	ids := slices.Compact(slices.Sorted(slices.Values(externalIDs)))
	var listable []string
	for _, id := range ids {
		if id == "" {
			continue
		}
		if strings.Contains(id, ",") {
			f, err := a.Find(ctx, id)
			n.Filtered++
			if err != nil {
				return nil, n, err
			}
			if f.ID != 0 {
				found[id] = f
			}
			continue
		}
		listable = append(listable, id)
	}
	left := listable
	for len(left) > 0 && !a.scanOnly.Load() {
		chunk := left[:min(FindBatch, len(left))]
		want := make(map[string]bool, len(chunk))
		vals := make([]any, len(chunk))
		for i, id := range chunk {
			want[id], vals[i] = true, id
		}
		ignored := false
		reqs, err := a.pages(ctx, acs.Filter{}.In("external_id", vals...), a.scanPages, func(it *acs.Content) bool {
			if it == nil || it.ExternalID == nil || !want[*it.ExternalID] {
				ignored = true
				return false
			}
			keepOldest(found, *it.ExternalID, it)
			return true
		})
		n.Filtered += reqs
		switch {
		case errors.Is(err, acs.ErrInvalid):
			// Refused: external_id is not searchable on this service.
			a.scanOnly.Store(true)
		case err != nil:
			return nil, n, fmt.Errorf("look up %d external ids: %w", len(chunk), err)
		case ignored:
			a.scanOnly.Store(true)
		default:
			left = left[len(chunk):]
		}
	}
	if len(left) == 0 {
		return found, n, nil
	}
	// The scan answers for every id left at once, whatever it found by
	// filter before: those found stay found.
	want := make(map[string]bool, len(left))
	for _, id := range left {
		want[id] = true
		delete(found, id)
	}
	scanCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		scanCtx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
		defer cancel()
	}
	reqs, err := a.pages(scanCtx, acs.Filter{}, a.scanPages, func(it *acs.Content) bool {
		if it != nil && it.ExternalID != nil && want[*it.ExternalID] {
			keepOldest(found, *it.ExternalID, it)
		}
		return true
	})
	n.Scanned += reqs
	switch {
	case errors.Is(err, errPageBudget):
		return nil, n, fmt.Errorf("look up %d external ids: %w (more than %d pages of %d)", len(left), ErrUnverifiable, a.scanPages, scanPageSize)
	case err != nil && ctx.Err() == nil && scanCtx.Err() != nil:
		return nil, n, fmt.Errorf("look up %d external ids: %w (out of time after %d pages)", len(left), ErrUnverifiable, reqs)
	case err != nil:
		return nil, n, fmt.Errorf("look up %d external ids: %w", len(left), err)
	}
	return found, n, nil
}

// keepOldest records it for id unless an older copy is recorded already.
func keepOldest(found map[string]Found, id string, it *acs.Content) {
	if f, ok := found[id]; !ok || it.ID < f.ID {
		nf := Found{ID: it.ID, Type: it.Type}
		if it.Title != nil {
			nf.Title = *it.Title
		}
		found[id] = nf
	}
}

// errPageBudget ends a listing that would read more pages than allowed.
var errPageBudget = errors.New("page budget spent")

// pages lists /v3/content page by page (100 a page) with filter f, handing
// each item to each until it returns false, and counts the requests. It
// ends the list as acs's iterators do (an empty page, or a short one that
// reaches any total reported), and fails with errPageBudget before asking
// for more than budget pages.
func (a *ACS) pages(ctx context.Context, f acs.Filter, budget int, each func(*acs.Content) bool) (int, error) {
	o := acs.ListOptions{Page: 1, PageSize: scanPageSize, Filter: f}
	requests, seen := 0, 0
	for {
		if requests >= budget {
			return requests, errPageBudget
		}
		items, resp, err := a.c.Content.List(ctx, &o)
		requests++
		if err != nil {
			return requests, err
		}
		for _, it := range items {
			if !each(it) {
				return requests, nil
			}
		}
		if len(items) == 0 {
			return requests, nil
		}
		seen += len(items)
		size, total := scanPageSize, 0
		if resp != nil {
			size, total = cmp.Or(resp.PageSize, size), resp.Total
		}
		if len(items) < size && (total <= 0 || seen >= total) {
			return requests, nil
		}
		o.Page++
	}
}

// FindMany is the gated [BatchFinder]: the API's own when it has one, else
// one Find per id.
func (a gated) FindMany(ctx context.Context, externalIDs []string) (map[string]Found, Lookups, error) {
	if err := a.before(ctx); err != nil {
		return nil, Lookups{}, err
	}
	if bf, ok := a.api.(BatchFinder); ok {
		found, n, err := bf.FindMany(ctx, externalIDs)
		return found, n, a.after(err)
	}
	var n Lookups
	found := make(map[string]Found)
	for _, id := range externalIDs {
		f, err := a.api.Find(ctx, id)
		n.Filtered++
		if err != nil {
			return nil, n, a.after(err)
		}
		if f.ID != 0 {
			found[id] = f
		}
	}
	return found, n, nil
}
