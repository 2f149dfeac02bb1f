package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// Withdrawn items (a payload with Cancelled set: an iCalendar event that
// was cancelled, or that left its calendar before it took place) go
// through the outbox like any other change, under the same claim, and end
// as dedupe.Removed: remembered for good, so that the item is never
// posted, updated or deleted again. A DELETE answered 404 means the
// content is gone already, which is what was wanted.

// Delete implements [API.Delete].
func (a *ACS) Delete(ctx context.Context, typ string, id int64) error {
	var err error
	switch typ {
	case transform.TypeStory:
		_, err = a.c.Stories.Delete(ctx, id)
	case transform.TypeLink:
		_, err = a.c.Links.Delete(ctx, id)
	case transform.TypeEvent:
		_, err = a.c.Events.Delete(ctx, id)
	case transform.TypeNeed:
		_, err = a.c.Needs.Delete(ctx, id)
	default:
		return fmt.Errorf("delete %d: %w: unknown content type %q", id, acs.ErrInvalid, typ)
	}
	return err
}

func (a gated) Delete(ctx context.Context, typ string, id int64) error {
	if err := a.before(ctx); err != nil {
		return err
	}
	return a.after(a.api.Delete(ctx, typ, id))
}

// remove deletes a withdrawn item's content, if the service has any. rec
// is the record as the claim check found it; pending is the hash of a POST
// that may have landed (see attempt).
func (p *Publisher) remove(ctx context.Context, j job, rec dedupe.Record, pending string, pl *transform.Payload) result {
	typ := cmp.Or(rec.Type, pl.Type)
	id := rec.ContentID
	if id == 0 {
		if pending == "" {
			// Never posted (or every POST was refused): nothing to
			// delete, only to remember.
			return result{s: dedupe.Settlement{Kind: dedupe.Removed}, outcome: "deleted", typ: typ}
		}
		found, err := p.api.Find(ctx, j.Key.ExternalID)
		if err != nil {
			return p.failed(j, typ, err, true)
		}
		if found.ID == 0 {
			return result{s: dedupe.Settlement{Kind: dedupe.Removed}, outcome: "deleted", typ: typ}
		}
		id, typ = found.ID, cmp.Or(found.Type, typ)
	}
	err := p.api.Delete(ctx, typ, id)
	if err == nil || errors.Is(err, acs.ErrNotFound) {
		return result{s: dedupe.Settlement{Kind: dedupe.Removed, ContentID: id}, outcome: "deleted", typ: typ}
	}
	return p.failed(j, typ, err, pending != "")
}
