package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/transform"
)

// API is what the publisher needs from the service. [ACS] implements it
// over an *acs.Client. Failures the service answered are reported as
// *acs.Error (see [acs.Error]); anything else counts as a transport failure.
type API interface {
	// Create posts p to its type's path and returns the new content id.
	Create(ctx context.Context, p *transform.Payload) (int64, error)
	// Update puts p to /v3/{p.Type}/{id}.
	Update(ctx context.Context, id int64, p *transform.Payload) error
	// Delete removes content id of type typ (DELETE /v3/{typ}/{id}).
	Delete(ctx context.Context, typ string, id int64) error
	// Find looks content up by external id; a zero Found.ID means none.
	Find(ctx context.Context, externalID string) (Found, error)
	// Categories lists every category of the service.
	Categories(ctx context.Context) ([]Category, error)
	// CreateCategory creates a category named name.
	CreateCategory(ctx context.Context, name string) (Category, error)
}

// Found is content found by external id.
type Found struct {
	ID   int64
	Type string
	// Title is the content's title on the service, when the answer shows
	// it (reconcile mode compares it with the feed's).
	Title string
}

// Category is a category of the service.
type Category struct {
	ID   int64
	Name string
}

// ErrUnverifiable reports a look-up by external id that could not finish:
// the service does not filter on external_id, and its content is too large
// to read through within the page budget ([WithScanPages]) or half the
// attempt's time. Whether the item exists is unknown, so it must not be
// posted blind; the publisher retries, and after Options.MaxUnresolved
// attempts in a row dead-letters the item for an operator.
var ErrUnverifiable = errors.New("cannot verify whether it exists: external_id not searchable and content too large to scan")

// DefaultScanPages is how many pages of 100 a look-up reads at most when
// the service does not filter on external_id.
const DefaultScanPages = 50

// scanPageSize is the page size of the look-up scan: the spec's default,
// which every server serves (the spec gives no maximum).
const scanPageSize = acs.DefaultPageSize

// ACS is the [API] over an *acs.Client. It turns a payload into the create
// or update request of its type, dropping the fields the type lacks (an
// Event has no publish date, a Story no external URL, a Need sends its
// quantity and date only on create and its URL only on update). An update
// sends every text and list field its type has, empty ones included, so
// that the service ends up as the source is (see the builders in
// convert.go).
type ACS struct {
	c         *acs.Client
	scanPages int
	// scanOnly is set once the service refused an external_id filter.
	scanOnly atomic.Bool
}

var _ API = (*ACS)(nil)

// ACSOption configures [NewACS].
type ACSOption func(*ACS)

// WithScanPages bounds the pages of 100 items one look-up reads when the
// service does not filter on external_id (default [DefaultScanPages]).
func WithScanPages(n int) ACSOption {
	return func(a *ACS) {
		if n > 0 {
			a.scanPages = n
		}
	}
}

// NewACS returns the API over c.
func NewACS(c *acs.Client, opts ...ACSOption) *ACS {
	a := &ACS{c: c, scanPages: DefaultScanPages}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Create implements [API.Create].
func (a *ACS) Create(ctx context.Context, p *transform.Payload) (int64, error) {
	// Only the id is kept, so only the id is read from the answer.
	var out *acs.Ref
	var resp *acs.Response
	var err error
	switch p.Type {
	case transform.TypeStory:
		out, resp, err = a.c.Stories.CreateRef(ctx, storyCreate(p))
	case transform.TypeLink:
		out, resp, err = a.c.Links.CreateRef(ctx, linkCreate(p))
	case transform.TypeEvent:
		out, resp, err = a.c.Events.CreateRef(ctx, eventCreate(p))
	case transform.TypeNeed:
		out, resp, err = a.c.Needs.CreateRef(ctx, needCreate(p))
	default:
		return 0, fmt.Errorf("create %q: %w: unknown content type %q", p.ExternalID, acs.ErrInvalid, p.Type)
	}
	if err != nil {
		return 0, err
	}
	if out != nil && out.ID != 0 {
		return out.ID, nil
	}
	// The spec does not show the create answer. Without an id in the body,
	// take it from a Location header, else find the item just created by
	// its external id; failing both, the error makes the next attempt look
	// it up before posting again.
	if id := locationID(resp); id != 0 {
		return id, nil
	}
	if f, ferr := a.Find(ctx, p.ExternalID); ferr == nil && f.ID != 0 {
		return f.ID, nil
	}
	return 0, fmt.Errorf("create %s %q: the answer carries no id", p.Type, p.ExternalID)
}

// locationID reads the id from a Location header such as /v3/story/42.
func locationID(resp *acs.Response) int64 {
	if resp == nil || resp.Response == nil {
		return 0
	}
	loc := strings.TrimRight(resp.Header.Get("Location"), "/")
	if i := strings.LastIndexByte(loc, '/'); i >= 0 {
		if id, err := strconv.ParseInt(loc[i+1:], 10, 64); err == nil && id > 0 {
			return id
		}
	}
	return 0
}

// Update implements [API.Update].
func (a *ACS) Update(ctx context.Context, id int64, p *transform.Payload) error {
	var err error
	switch p.Type {
	case transform.TypeStory:
		_, _, err = a.c.Stories.Update(ctx, id, storyUpdate(p))
	case transform.TypeLink:
		_, _, err = a.c.Links.Update(ctx, id, linkUpdate(p))
	case transform.TypeEvent:
		_, _, err = a.c.Events.Update(ctx, id, eventUpdate(p))
	case transform.TypeNeed:
		_, _, err = a.c.Needs.Update(ctx, id, needUpdate(p))
	default:
		return fmt.Errorf("update %q: %w: unknown content type %q", p.ExternalID, acs.ErrInvalid, p.Type)
	}
	return err
}

// Find implements [API.Find] with GET /v3/content and an external_id eq
// filter. When a past fault left several items, the oldest is taken.
//
// The spec does not say external_id is searchable. When the service
// refuses the filter (400), or ignores it (the page holds other items and
// not this one), Find reads the pages instead: slow, but only ambiguous
// failures get here, and guessing "not there" would post a duplicate. The
// scan is bounded, by the page budget ([WithScanPages]) and by half of the
// time ctx leaves (the other half is the POST's); when it cannot finish,
// Find returns an error matching [ErrUnverifiable].
func (a *ACS) Find(ctx context.Context, externalID string) (Found, error) {
	if !a.scanOnly.Load() {
		items, _, err := a.c.Content.List(ctx, &acs.ListOptions{PageSize: scanPageSize, Filter: acs.Filter{}.Eq("external_id", externalID)})
		switch {
		case err == nil:
			if f, others := oldest(items, externalID); f.ID != 0 || !others {
				return f, nil
			}
		case errors.Is(err, acs.ErrInvalid):
			a.scanOnly.Store(true)
		default:
			return Found{}, err
		}
	}
	return a.scan(ctx, externalID)
}

// scan reads the content pages for externalID within its budgets.
func (a *ACS) scan(ctx context.Context, externalID string) (Found, error) {
	scanCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		scanCtx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
		defer cancel()
	}
	budget := a.scanPages * scanPageSize
	read := 0
	var all []*acs.Content
	for it, err := range a.c.Content.All(scanCtx, &acs.ListOptions{PageSize: scanPageSize}) {
		if err != nil {
			if ctx.Err() == nil && scanCtx.Err() != nil {
				return Found{}, fmt.Errorf("find %q: %w (out of time after %d items)", externalID, ErrUnverifiable, read)
			}
			return Found{}, err
		}
		if read++; read > budget {
			return Found{}, fmt.Errorf("find %q: %w (more than %d pages of %d)", externalID, ErrUnverifiable, a.scanPages, scanPageSize)
		}
		if it != nil && it.ExternalID != nil && *it.ExternalID == externalID {
			all = append(all, it)
		}
	}
	f, _ := oldest(all, externalID)
	return f, nil
}

// oldest returns the item with externalID and the lowest id, and whether
// items had other external ids (a server that ignored the filter).
func oldest(items []*acs.Content, externalID string) (Found, bool) {
	var best *acs.Content
	others := false
	for _, it := range items {
		if it == nil || it.ExternalID == nil || *it.ExternalID != externalID {
			others = true
			continue
		}
		if best == nil || it.ID < best.ID {
			best = it
		}
	}
	if best == nil {
		return Found{}, others
	}
	return Found{ID: best.ID, Type: best.Type}, others
}

// Categories implements [API.Categories], walking every page. Pages are
// the spec's default size: a server that silently serves fewer than asked
// would otherwise look finished after its first page, and every name past
// it would be created again.
func (a *ACS) Categories(ctx context.Context) ([]Category, error) {
	var out []Category
	for c, err := range a.c.Categories.All(ctx, &acs.ListOptions{PageSize: acs.DefaultPageSize}) {
		if err != nil {
			return nil, err
		}
		out = append(out, Category{ID: c.ID, Name: c.Description})
	}
	return out, nil
}

// CreateCategory implements [API.CreateCategory].
func (a *ACS) CreateCategory(ctx context.Context, name string) (Category, error) {
	c, _, err := a.c.Categories.Create(ctx, &acs.CategoryCreate{Description: name})
	if err != nil {
		return Category{}, err
	}
	if c == nil || c.ID == 0 {
		return Category{}, fmt.Errorf("create category %q: the answer carries no id", name)
	}
	return Category{ID: c.ID, Name: cmp.Or(c.Description, name)}, nil
}
