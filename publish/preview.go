package publish

import (
	"context"
	"fmt"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// RepostPreview is what matching would make of one item of a fetch
// (feedworker preview).
type RepostPreview struct {
	// Index is the item's position in the payloads given.
	Index int
	// By is the matcher: MatchURL, MatchText or MatchAcross.
	By string
	// Target is the known item it is a repost of, and ContentID that
	// item's content (0 while not delivered).
	Target    dedupe.Key
	ContentID int64
	// Reason reads as the item history tells it: "repost of content N
	// (matched by link or GUID)".
	Reason string
}

// PreviewReposts tells which of a fetch's items matching would take for a
// known story, and of which item, by which matcher, without writing to
// the store: it reads each item's record (one round trip per item) and
// looks the fingerprints up as Accept does, but reserves nothing and
// records nothing. Two feeds polled at once are not foreseen (see
// reserve.go). nil when the store keeps no aliases or the feed does not
// match.
func (p *Publisher) PreviewReposts(ctx context.Context, feedID string, payloads []transform.Payload, o FeedOptions) ([]RepostPreview, error) {
	ai, ok := p.store.(dedupe.AliasIndex)
	if !ok || o.ICal != nil || !o.Reposts.matching() {
		return nil, nil
	}
	_, known, err := p.store.Validators(ctx, feedID)
	if err != nil {
		return nil, fmt.Errorf("preview reposts of feed %s: %w", feedID, err)
	}
	var kept []*transform.Payload
	var index []int
	var status []dedupe.Status
	seen := map[string]bool{}
	for i := range payloads {
		pl := &payloads[i]
		if pl.ExternalID == "" || seen[pl.ExternalID] || !validType(pl.Type) {
			continue
		}
		seen[pl.ExternalID] = true
		rec, found, err := p.store.Record(ctx, dedupe.Key{FeedID: feedID, ExternalID: pl.ExternalID})
		if err != nil {
			return nil, fmt.Errorf("preview reposts of feed %s: %w", feedID, err)
		}
		st := dedupe.StatusNew
		switch {
		case found && rec.Hash != pl.Hash:
			st = dedupe.StatusChanged
		case found:
			st = dedupe.StatusUnchanged
		}
		known = known || found
		kept, index, status = append(kept, pl), append(index, i), append(status, st)
	}
	plan, err := p.matchReposts(ctx, ai, feedID, kept, status, nil, o.Reposts, known, time.Now())
	if err != nil {
		return nil, fmt.Errorf("preview reposts of feed %s: %w", feedID, err)
	}
	var out []RepostPreview
	for i := range kept {
		m, ok := plan.match(i)
		if !ok || m.by == matchIdentity {
			continue
		}
		out = append(out, RepostPreview{Index: index[i], By: m.by, Target: m.target, ContentID: m.rec.ContentID, Reason: m.reason()})
	}
	return out, nil
}
