package publish

import (
	"context"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/transform"
)

// Two feeds that first see one story in the same pass both find no alias
// of it: looking up and then writing would let both post. So before its
// commit, a fetch reserves the aliases across feeds of every new item it
// is about to post ([dedupe.AliasIndex.ReserveAliases], one atomic step
// per fingerprint, in one round trip), and an item that finds one of its
// fingerprints held by another feed's item of the same story becomes a
// merge job waiting for that item (merge.go) instead of a POST.
//
// An item may have several fingerprints (its link, its GUID), each on its
// own key (on a Cluster in its own slot), so two items reserving at once
// may each win one. Every holder keeps the time of its reservation, and
// the earlier reservation wins (at equal times the smaller item key):
// both items compare the same two times, so exactly one of them yields.

// reserveAcross reserves the across-feed aliases of the new items about to
// be posted that matching left unmatched, and turns those that lose to
// another feed's item into merge jobs.
func (p *Publisher) reserveAcross(ctx context.Context, ai dedupe.AliasIndex, feedID string, kept []*transform.Payload, status []dedupe.Status, act []dedupe.Action, plan *repostPlan, o RepostOptions, now time.Time) error {
	if !o.URL || !o.AcrossFeeds || act == nil { // act nil: a preview, which writes nothing
		return nil
	}
	// Sized first: an Alias is large, and growing the slice by doubling
	// was most of what a reservation allocated.
	want := func(i int) bool {
		if status[i] != dedupe.StatusNew || (act[i] != dedupe.ActionPublish && act[i] != dedupe.ActionBackfill) {
			return false
		}
		_, matched := plan.matches[i]
		return !matched
	}
	n := 0
	for i := range status {
		if want(i) {
			n += len(plan.prints[i].urls)
		}
	}
	as := make([]dedupe.Alias, 0, n)
	owner := make([]int, 0, n)
	for i := range status {
		if !want(i) {
			continue
		}
		self := dedupe.Key{FeedID: feedID, ExternalID: kept[i].ExternalID}
		for _, fp := range plan.prints[i].urls {
			if !plan.shared[fp] {
				as = append(as, dedupe.Alias{AliasFP: dedupe.AliasFP{FP: fp}, Target: self, Type: kept[i].Type, Extra: plan.prints[i].title})
				owner = append(owner, i)
			}
		}
	}
	if len(as) == 0 {
		return nil
	}
	var held []dedupe.Alias
	err := p.storeOp(ctx, "aliases", func(ctx context.Context) (err error) {
		held, err = ai.ReserveAliases(ctx, as, now)
		return err
	})
	if err != nil {
		return err
	}
	type verdict struct {
		own    time.Time // the item's earliest reservation
		hasOwn bool
		// other is 1 + the index in held of the earliest other holder
		// of the same story (0: none); an index, as an Alias is large.
		other int
	}
	// By item, in one array; touched lists the items in the order first
	// met, as a map's range would list them in some order.
	verdicts := make([]verdict, len(kept))
	var touched []int
	plan.reserved = make(map[string]bool, len(as))
	for n, h := range held {
		i := owner[n]
		vi := &verdicts[i]
		if len(touched) == 0 || touched[len(touched)-1] != i {
			touched = append(touched, i)
		}
		if h.Target == as[n].Target {
			// Held by this item now, with the value and TTL aliasesOf
			// would put again after the commit: that put is skipped.
			plan.reserved[as[n].FP] = true
			if !vi.hasOwn || h.Since.Before(vi.own) {
				vi.own, vi.hasOwn = h.Since, true
			}
			continue
		}
		// Another feed's item of the same type, under a similar title
		// (a link reused for another story is no repost).
		if h.Target.FeedID == feedID || h.Type != kept[i].Type || !transform.TitleSimilar(h.Extra, plan.prints[i].title) {
			continue
		}
		if vi.other == 0 || earlier(h.Since, h.Target, held[vi.other-1].Since, held[vi.other-1].Target) {
			vi.other = n + 1
		}
	}
	for _, i := range touched {
		vi := &verdicts[i]
		self := dedupe.Key{FeedID: feedID, ExternalID: kept[i].ExternalID}
		if vi.other == 0 {
			continue
		}
		other := &held[vi.other-1]
		if vi.hasOwn && earlier(vi.own, self, other.Since, other.Target) {
			continue
		}
		var rec dedupe.Record
		var ok bool
		target := other.Target
		err := p.storeOp(ctx, "record", func(ctx context.Context) (err error) {
			if rec, ok, err = p.store.Record(ctx, target); err != nil {
				return err
			}
			target, rec, ok, err = p.resolveTarget(ctx, target, rec, ok)
			return err
		})
		if err != nil {
			return err
		}
		// No record yet: the holder's commit is under way. One that will
		// not be content (refused, removed, seen only) hides nothing.
		if ok && (rec.Type != kept[i].Type || rec.State != dedupe.StateActive) {
			continue
		}
		plan.matches[i] = repostMatch{by: MatchAcross, target: target, rec: rec,
			merge: &mergeInto{Target: target.String(), Categories: o.MergeCategories}}
	}
	return nil
}

// maxRepostHops bounds how far resolveTarget follows reposts of reposts.
const maxRepostHops = 3

// resolveTarget follows a target that is itself a repost of another
// item (recorded as seen only, with an identity alias in its feed: the
// holder of a fingerprint that lost another of its fingerprints to a
// third feed, say) to the item it is a repost of. A seen-only item with
// no such alias (first sight, not published) is returned as it is.
func (p *Publisher) resolveTarget(ctx context.Context, k dedupe.Key, rec dedupe.Record, ok bool) (dedupe.Key, dedupe.Record, bool, error) {
	ai, isAI := p.store.(dedupe.AliasIndex)
	for hop := 0; isAI && ok && rec.State == dedupe.StateSeenOnly && hop < maxRepostHops; hop++ {
		hits, err := ai.LookupAliases(ctx, []dedupe.AliasFP{{FeedID: k.FeedID, FP: identityFP(k.ExternalID)}}, time.Now())
		if err != nil {
			return k, rec, ok, err
		}
		if !hits[0].Found || hits[0].Target == k {
			break
		}
		k = hits[0].Target
		if rec, ok, err = p.store.Record(ctx, k); err != nil {
			return k, rec, ok, err
		}
	}
	return k, rec, ok, nil
}

// earlier reports whether a reservation made at ta by ka precedes one made
// at tb by kb.
func earlier(ta time.Time, ka dedupe.Key, tb time.Time, kb dedupe.Key) bool {
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return ka.String() < kb.String()
}
