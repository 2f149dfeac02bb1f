package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// A story that a feed sees after another feed of the same content type
// (matched across feeds) is not posted: it is queued as a merge job, an
// outbox entry of its own item whose envelope names the item it is a
// repost of. Delivering it waits until that item is content on the
// service, then adds the later sighting's categories to that content (GET
// /v3/content/{id}, then one PUT with every field the GET showed and the
// categories merged, when some are missing), and records the later item
// as seen only ([dedupe.Aliased]). Queued rather than done at once, it is
// as durable as any delivery: nothing is lost to a crash, and a first
// item that ends refused for good (a dead letter, removed on the service,
// recorded as seen only) makes the later one post as itself, so that a
// refused copy never hides another feed's.

// mergeInto is the envelope's note that an item is a repost of another
// feed's item.
type mergeInto struct {
	// Target is the item it is a repost of ([dedupe.Key.String]).
	Target string `json:"target"`
	// Categories: add the item's categories to the target's content.
	Categories bool `json:"categories,omitempty"`
}

// mergeTargetWait is how long a merge job waits for a target item with
// no record at all: the holder of a reservation whose commit is still
// under way takes a moment; one whose commit failed for good never comes,
// and the later item then posts as itself.
const mergeTargetWait = time.Minute

// mergePoll is how soon a merge job whose target is still queued looks
// again at first; it looks less often the longer it waits (a tenth of
// the wait so far, at most mergePollMax), so that a target in a long
// retry costs little.
const (
	mergePoll    = time.Second
	mergePollMax = time.Minute
)

// Outcomes of a merge job (publish_requests_total counts "merged", a PUT).
const (
	outcomeWaiting = "waiting" // the target is not content yet
	outcomeAliased = "aliased" // recorded as a repost; no request needed
	outcomeMerged  = "merged"  // categories added by a PUT
)

// CategoryMerger adds categories to existing content. [ACS] implements it;
// an API without it gets no categories merged (reposts are still not
// posted).
type CategoryMerger interface {
	// MergeCategories adds categoryIDs to content id of type typ, and
	// reports how many it added (0: it had them all, and nothing was
	// sent).
	MergeCategories(ctx context.Context, typ string, id int64, categoryIDs []int64) (int, error)
}

// MergeCategories implements [CategoryMerger]: GET /v3/content/{id}, and
// when categories are missing, PUT /v3/{typ}/{id} with the envelope's data
// object carrying id and every field of that type the GET showed
// (spec 4.3, 2.7), the categories merged. Sending every field leaves the
// content as it was whether the service replaces or patches on PUT, on
// which the spec is silent.
func (a *ACS) MergeCategories(ctx context.Context, typ string, id int64, categoryIDs []int64) (int, error) {
	cur, _, err := a.c.Content.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	have := map[int64]bool{}
	ids := make([]int64, 0, len(cur.Categories)+len(categoryIDs))
	for _, c := range cur.Categories {
		have[c.ID] = true
		ids = append(ids, c.ID)
	}
	added := 0
	for _, c := range categoryIDs {
		if !have[c] {
			have[c] = true
			ids = append(ids, c)
			added++
		}
	}
	if added == 0 {
		return 0, nil
	}
	// The GET's object, without what an update does not carry (self,
	// type) and with refs reduced to their ids as every request sends
	// them, decoded into the type's update request: the fields of that
	// type and nothing else.
	cur.Self, cur.Type = "", ""
	for _, r := range []*acs.Ref{cur.Author, cur.Priority, cur.Status, cur.EventTimeZone} {
		if r != nil {
			r.Self = ""
		}
	}
	cur.Categories = refList(ids)
	cur.Segments = refList(refIDs(cur.Segments))
	raw, err := json.Marshal(cur)
	if err != nil {
		return 0, fmt.Errorf("merge categories into %s %d: %w", typ, id, err)
	}
	switch typ {
	case transform.TypeStory:
		err = putAs[acs.StoryUpdate](raw, func(u *acs.StoryUpdate) error { _, _, err := a.c.Stories.Update(ctx, id, u); return err })
	case transform.TypeLink:
		err = putAs[acs.LinkUpdate](raw, func(u *acs.LinkUpdate) error { _, _, err := a.c.Links.Update(ctx, id, u); return err })
	case transform.TypeEvent:
		err = putAs[acs.EventUpdate](raw, func(u *acs.EventUpdate) error { _, _, err := a.c.Events.Update(ctx, id, u); return err })
	case transform.TypeNeed:
		err = putAs[acs.NeedUpdate](raw, func(u *acs.NeedUpdate) error { _, _, err := a.c.Needs.Update(ctx, id, u); return err })
	default:
		return 0, fmt.Errorf("merge categories into %d: %w: unknown content type %q", id, acs.ErrInvalid, typ)
	}
	if err != nil {
		return 0, err
	}
	return added, nil
}

func putAs[T any](raw []byte, put func(*T) error) error {
	var u T
	if err := json.Unmarshal(raw, &u); err != nil {
		return fmt.Errorf("merge categories: %w", err)
	}
	return put(&u)
}

func refIDs(rs []acs.Ref) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// MergeCategories passes the call through the gate.
func (a gated) MergeCategories(ctx context.Context, typ string, id int64, categoryIDs []int64) (int, error) {
	m, ok := a.api.(CategoryMerger)
	if !ok {
		return 0, nil
	}
	probe, err := a.before(ctx)
	if err != nil {
		return 0, err
	}
	n, err := m.MergeCategories(ctx, typ, id, categoryIDs)
	return n, a.after(probe, err)
}

// merge delivers a merge job: it returns the result, and done false when
// the item is to be posted as itself after all (the normal path).
func (p *Publisher) merge(ctx context.Context, log *slog.Logger, j job, env *envelope, send *transform.Payload, rec dedupe.Record, pending string) (r result, done bool) {
	pl := &env.Payload
	if rec.ContentID != 0 {
		return result{}, false // posted as itself before: its own content
	}
	if pending != "" {
		// An earlier attempt may have posted it as itself.
		found, err := p.api.Find(ctx, j.Key.ExternalID)
		if err != nil {
			return p.failed(j, pl.Type, err, true), true
		}
		if found.ID != 0 {
			return result{}, false
		}
	}
	target, err := dedupe.ParseKey(env.MergeInto.Target)
	if err != nil {
		return result{s: dedupe.Settlement{Kind: dedupe.Dead, Reason: "undecodable merge target: " + err.Error()}, outcome: "dead_letter", typ: pl.Type, err: err}, true
	}
	var trec dedupe.Record
	var ok bool
	err = p.storeOp(ctx, "record", func(ctx context.Context) (err error) {
		if trec, ok, err = p.store.Record(ctx, target); err != nil {
			return err
		}
		target, trec, ok, err = p.resolveTarget(ctx, target, trec, ok)
		return err
	})
	poll := min(max(time.Since(j.Enqueued)/10, mergePoll), mergePollMax)
	wait := result{s: release(j, time.Now().Add(poll)), outcome: outcomeWaiting, typ: pl.Type}
	switch {
	case err != nil:
		wait.err = fmt.Errorf("read the record of %s: %w", target, err)
		return wait, true
	case !ok && time.Since(j.Enqueued) < mergeTargetWait:
		wait.err = fmt.Errorf("%s is not recorded yet", target)
		return wait, true
	case !ok || trec.Type != pl.Type || trec.State != dedupe.StateActive:
		log.Info("the item this one is a repost of will not be content; posting it as itself", "repost_of", target, "known", ok, "state", string(trec.State))
		return result{}, false
	case trec.ContentID == 0:
		wait.err = fmt.Errorf("%s is not content yet", target)
		return wait, true
	}
	alias := result{s: dedupe.Settlement{Kind: dedupe.Aliased, ContentID: trec.ContentID}, outcome: outcomeAliased, typ: trec.Type}
	if !env.MergeInto.Categories || send == nil || len(send.CategoryIDs) == 0 {
		return alias, true
	}
	m, _ := p.api.(CategoryMerger)
	if m == nil {
		return alias, true
	}
	added, err := m.MergeCategories(ctx, trec.Type, trec.ContentID, slices.Compact(slices.Sorted(slices.Values(send.CategoryIDs))))
	switch {
	case errors.Is(err, acs.ErrNotFound):
		// Deleted on the service on purpose: left alone, as its own
		// feed's item is.
		log.Warn("the content this item is a repost of was deleted on the service; left alone", "repost_of", target, "content_id", trec.ContentID)
		return alias, true
	case err != nil && !errors.Is(err, acs.ErrUnreadable):
		return p.failed(j, trec.Type, err, false), true
	}
	if added > 0 {
		alias.outcome = outcomeMerged
	}
	return alias, true
}
