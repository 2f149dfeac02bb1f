package publish

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/internal/feedseries"
	"github.com/feedworker/feedworker/transform"
)

// RepostOptions say how a story that comes back under a new identity is
// recognised (see the README's "Reposts"). The zero value turns matching
// and the flood guard off.
type RepostOptions struct {
	// URL matches a new item to a known one by normalised link or GUID.
	URL bool
	// Text matches by title, publication day and near-identical body,
	// against the feed's items first seen within Window.
	Text   bool
	Window time.Duration
	// AcrossFeeds matches by URL against the items of every feed of the
	// same content type; MergeCategories then adds the later sighting's
	// categories to the first one's content.
	AcrossFeeds     bool
	MergeCategories bool
	// FloodMax holds a poll's new items when more than this many are dated
	// before the newest item already seen (0: never held).
	FloodMax int
}

func (r RepostOptions) matching() bool { return r.URL || r.Text }

// MaxSimHashDistance is how many of the 64 SimHash bits two bodies may
// differ in and still be one text (with the same day and a similar title,
// transform.TitleSimilar): 3, the
// figure Manku, Jain and Das Sarma found for near-duplicate web pages, and
// the corpus sweep (TestCorpusReposts) finds no two items of one fetch
// within it.
const MaxSimHashDistance = 3

// Match names how an item was recognised, as metrics and logs show it.
const (
	MatchURL    = "url"
	MatchText   = "text"
	MatchAcross = "across_feeds"
	// matchIdentity: a changed item that was recorded as a repost; its
	// change goes to the item it is a repost of.
	matchIdentity = "identity"
)

// repostMatch is what matching found for one item of a fetch.
type repostMatch struct {
	by     string // MatchURL, MatchText or MatchAcross
	target dedupe.Key
	rec    dedupe.Record
	// merge queues the item as a merge job (merge.go) rather than
	// recording it as seen only: its target is not content yet, or its
	// categories are to be added to the target's.
	merge *mergeInto
}

// itemPrints are one item's fingerprints.
type itemPrints struct {
	urls []string // "u:" (a URL, from link or GUID) and "g:" (another GUID)
	// bands are the text fingerprints, "b:" publication day and one 16-bit
	// band of the body's SimHash, four of them: two bodies within
	// MaxSimHashDistance bits agree on one band at least. None when the
	// item has no date or too short a body.
	bands []string
	sim   uint64
	title string // transform.TitleKey
}

// simBands is how many bands of the SimHash are keys; it must exceed
// MaxSimHashDistance.
const simBands = 4

// printLen is the length of a digest: a kind letter, ':' and 16 bytes.
const printLen = 2 + 16

// appendDigest appends the fingerprint of b to dst: kind, ':' and the
// first 12 bytes of its SHA-256 in unpadded base64.
func appendDigest(dst []byte, kind byte, b []byte) []byte {
	sum := sha256.Sum256(b)
	dst = append(dst, kind, ':')
	n := len(dst)
	dst = append(dst, make([]byte, 16)...) // 12 bytes are 16 in unpadded base64
	base64.RawURLEncoding.Encode(dst[n:], sum[:12])
	return dst
}

// appendBandPrint appends the text fingerprint of one band of a SimHash
// to dst: the digest 'b' of fmt.Sprintf("%s|%d|%04x", day, band, bits),
// without fmt.
func appendBandPrint(dst, day []byte, band int, bits uint64) []byte {
	var buf [64]byte
	b := append(buf[:0], day...)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(band), 10)
	b = append(b, '|')
	for shift := 12; shift > 0 && bits>>shift == 0; shift -= 4 {
		b = append(b, '0') // %04x
	}
	b = strconv.AppendUint(b, bits, 16)
	return appendDigest(dst, 'b', b)
}

// printsOf computes an item's fingerprints. They are written into one
// buffer and cut out of one string, in one slice: a string and a slice
// each were most of what matching allocated per item.
func printsOf(pl *transform.Payload, text bool) itemPrints {
	var ip itemPrints
	var buf [(2 + simBands) * printLen]byte
	b := buf[:0]
	nurl := 0
	add := func(kind byte, s string) {
		b = appendDigest(b, kind, []byte(s))
		fp := b[len(b)-printLen:]
		for i := range nurl {
			if string(b[i*printLen:(i+1)*printLen]) == string(fp) {
				b = b[:len(b)-printLen]
				return
			}
		}
		nurl++
	}
	link := transform.AliasURL(pl.ExternalURL)
	if link != "" {
		add('u', link)
	}
	if pl.GUID != "" {
		a := link // a permalink GUID is the link: not normalised twice
		if pl.GUID != pl.ExternalURL {
			a = transform.AliasURL(pl.GUID)
		}
		if a != "" {
			add('u', a)
		} else {
			add('g', transform.AliasGUID(pl.GUID))
		}
	}
	ip.title = transform.TitleKey(pl.Title)
	nband := 0
	if text && !pl.PublishDate.IsZero() {
		if sim, ok := transform.BodySimHash(pl.Body); ok {
			var dayBuf [16]byte
			day := pl.PublishDate.UTC().AppendFormat(dayBuf[:0], time.DateOnly)
			ip.sim = sim
			for band := range simBands {
				b = appendBandPrint(b, day, band, (sim>>(16*band))&0xffff)
			}
			nband = simBands
		}
	}
	if len(b) == 0 {
		return ip
	}
	all, fps := string(b), make([]string, nurl+nband)
	for i := range fps {
		fps[i] = all[i*printLen : (i+1)*printLen]
	}
	ip.urls, ip.bands = fps[:nurl:nurl], fps[nurl:]
	return ip
}

// identityFP is the alias of an identity recorded as a repost: its
// later changes go to the item it is a repost of.
func identityFP(externalID string) string { return "i:" + externalID }

// repostPlan is the outcome of matching one fetch.
type repostPlan struct {
	prints  []itemPrints
	shared  map[string]bool // fingerprints several items of the fetch have
	matches map[int]repostMatch
	// reserved are the across-feed fingerprints reserveAcross found held
	// by their own item after its reservation (nil: none).
	reserved map[string]bool
}

// matchReposts looks the fetch's new items (and, for changed ones, their
// identity aliases) up in the alias index: one round trip, plus one
// record read per candidate. Items never match one another, nor any item
// of the same fetch: a fingerprint two items of the fetch share (podcast
// episodes linking to the show page) is used by none.
func (p *Publisher) matchReposts(ctx context.Context, ai dedupe.AliasIndex, feedID string, kept []*transform.Payload, status []dedupe.Status, act []dedupe.Action, o RepostOptions, known bool, now time.Time) (*repostPlan, error) {
	// The maps and slices below are sized up front: grown by doubling,
	// they were most of what matching allocated for a fetch.
	plan := &repostPlan{prints: make([]itemPrints, len(kept)), matches: map[int]repostMatch{}}
	nurl, nband := 0, 0
	for i, pl := range kept {
		plan.prints[i] = printsOf(pl, o.Text && status[i] == dedupe.StatusNew) // SimHash only for what may be written or matched
		nurl += len(plan.prints[i].urls)
		nband += len(plan.prints[i].bands)
	}
	// The fingerprints several items have are found by sorting them all
	// (an item's own are distinct): a map counting them was the largest
	// allocation of matching. Most fetches share none (shared stays nil).
	all := make([]string, 0, nurl+nband)
	for i := range kept {
		all = append(append(all, plan.prints[i].urls...), plan.prints[i].bands...)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			if plan.shared == nil {
				plan.shared = map[string]bool{}
			}
			plan.shared[all[i]] = true
		}
	}
	type ask struct {
		item int
		by   string
	}
	// Sized for what the loop below asks, shared fingerprints aside:
	// sized for every matcher, the slices were twice what a first sight
	// (across feeds only) asks.
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	perURL, perBand, nask := b2i(o.URL && known)+b2i(o.URL && o.AcrossFeeds), b2i(o.Text && known), 0
	for i, s := range status {
		switch s {
		case dedupe.StatusNew:
			nask += perURL*len(plan.prints[i].urls) + perBand*len(plan.prints[i].bands)
		case dedupe.StatusChanged:
			nask += b2i(o.URL)
		}
	}
	fps := make([]dedupe.AliasFP, 0, nask)
	asks := make([]ask, 0, nask)
	for i, s := range status {
		ip := plan.prints[i]
		switch s {
		case dedupe.StatusNew:
			if o.URL && known {
				for _, fp := range ip.urls {
					if !plan.shared[fp] {
						fps, asks = append(fps, dedupe.AliasFP{FeedID: feedID, FP: fp}), append(asks, ask{i, MatchURL})
					}
				}
			}
			if o.URL && o.AcrossFeeds {
				for _, fp := range ip.urls {
					if !plan.shared[fp] {
						fps, asks = append(fps, dedupe.AliasFP{FP: fp}), append(asks, ask{i, MatchAcross})
					}
				}
			}
			if o.Text && known {
				for _, fp := range ip.bands {
					if !plan.shared[fp] {
						fps, asks = append(fps, dedupe.AliasFP{FeedID: feedID, FP: fp}), append(asks, ask{i, MatchText})
					}
				}
			}
		case dedupe.StatusChanged:
			if o.URL {
				fps, asks = append(fps, dedupe.AliasFP{FeedID: feedID, FP: identityFP(kept[i].ExternalID)}), append(asks, ask{i, matchIdentity})
			}
		}
	}
	if len(fps) == 0 {
		return plan, p.reserveAcross(ctx, ai, feedID, kept, status, act, plan, o, now)
	}
	var hits []dedupe.Alias
	err := p.storeOp(ctx, "aliases", func(ctx context.Context) (err error) {
		hits, err = ai.LookupAliases(ctx, fps, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The first usable hit per item wins: a feed's own link or GUID, then
	// another feed's, then text (asks are in that order per item).
	var inFetch map[string]bool // made for the first hit that needs it
	for n, h := range hits {
		a := asks[n]
		if !h.Found || plan.matches[a.item].by != "" {
			continue
		}
		pl := kept[a.item]
		if a.by == matchIdentity && h.Target.FeedID != feedID {
			// A repost of another feed's item changed: it stays a merge
			// job while queued, and is left alone once recorded as a
			// repost (merge.go decides at delivery).
			plan.matches[a.item] = repostMatch{by: matchIdentity, target: h.Target, merge: &mergeInto{Target: h.Target.String(), Categories: o.MergeCategories}}
			continue
		}
		switch {
		case a.by == MatchAcross && (h.Target.FeedID == feedID || h.Type != pl.Type):
			continue // its own feed is asked above; other types never merge
		case a.by != MatchAcross && h.Target.FeedID != feedID:
			continue
		case a.by != MatchAcross && inFetchOf(&inFetch, kept)[h.Target.ExternalID]:
			continue // never a match within one fetch
		case a.by == MatchURL || a.by == MatchAcross:
			// A link reused for another story (a "latest" page, a
			// recycled slug) is no repost: the titles must agree too.
			if !transform.TitleSimilar(h.Extra, plan.prints[a.item].title) {
				continue
			}
		case a.by == MatchText:
			simHex, title, _ := strings.Cut(h.Extra, " ")
			sim, err := strconv.ParseUint(simHex, 16, 64)
			if err != nil || transform.SimHashDistance(sim, plan.prints[a.item].sim) > MaxSimHashDistance ||
				!transform.TitleSimilar(title, plan.prints[a.item].title) {
				continue
			}
		}
		var rec dedupe.Record
		var ok bool
		err := p.storeOp(ctx, "record", func(ctx context.Context) (err error) {
			rec, ok, err = p.store.Record(ctx, h.Target)
			return err
		})
		if err != nil {
			return nil, err
		}
		// An alias is a hint: only a target still known, not removed
		// on the service on purpose, and of the same type counts.
		if !ok || rec.State == dedupe.StateRemoved || rec.Type != pl.Type {
			continue
		}
		// Another feed's item counts only once it is content on the
		// service: one still queued may yet be refused for good (that
		// feed's categories, say), and this feed's copy must not be lost
		// with it.
		if a.by == MatchAcross && (rec.ContentID == 0 || rec.State != dedupe.StateActive) {
			continue
		}
		if a.by == MatchText && now.Sub(rec.FirstSeen) > o.Window {
			continue
		}
		plan.matches[a.item] = repostMatch{by: a.by, target: h.Target, rec: rec}
	}
	return plan, p.reserveAcross(ctx, ai, feedID, kept, status, act, plan, o, now)
}

// inFetchOf returns *m, the set of the fetch's external ids, made first
// if it is nil.
func inFetchOf(m *map[string]bool, kept []*transform.Payload) map[string]bool {
	if *m == nil {
		*m = make(map[string]bool, len(kept))
		for _, pl := range kept {
			(*m)[pl.ExternalID] = true
		}
	}
	return *m
}

// aliasesOf are the aliases a committed fetch leaves: every item's URL
// fingerprints (renewed while the item is in its feed), a new item's text
// fingerprint for the window, and a repost's identity alias. A repost's
// fingerprints point to the item it is a repost of. Fingerprints shared
// within the fetch are not kept.
func aliasesOf(feedID string, kept []*transform.Payload, status []dedupe.Status, plan *repostPlan, o RepostOptions) []dedupe.Alias {
	// Counted first, by the loop's rules: an Alias is large, and growing
	// the slice by doubling was 3% of a first pass's allocation (and
	// sizing it for the most it could hold, 2% more).
	n := 0
	for i := range kept {
		own, matched := true, false
		if m, ok := plan.matches[i]; ok {
			own, matched = m.target.FeedID == feedID, true
			n++
		}
		ip := plan.prints[i]
		for _, fp := range ip.urls {
			if plan.shared[fp] {
				continue
			}
			if own {
				n++
			}
			if o.AcrossFeeds && (matched || !plan.reserved[fp]) {
				n++
			}
		}
		if o.Text && status[i] == dedupe.StatusNew && own {
			for _, fp := range ip.bands {
				if !plan.shared[fp] {
					n++
				}
			}
		}
	}
	out := make([]dedupe.Alias, 0, n)
	for i, pl := range kept {
		target, typ := dedupe.Key{FeedID: feedID, ExternalID: pl.ExternalID}, pl.Type
		m, matched := plan.matches[i]
		if matched {
			target, typ = m.target, m.rec.Type
			out = append(out, dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: feedID, FP: identityFP(pl.ExternalID)}, Target: target, Type: typ})
		}
		ip := plan.prints[i]
		for _, fp := range ip.urls {
			if plan.shared[fp] {
				continue
			}
			if target.FeedID == feedID {
				out = append(out, dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: feedID, FP: fp}, Target: target, Type: typ, Extra: ip.title})
			}
			// An alias this fetch reserved for the item itself holds what
			// putting it would write (the reservation's time is kept by a
			// put anyway): one write per fingerprint fewer.
			if o.AcrossFeeds && (matched || !plan.reserved[fp]) {
				out = append(out, dedupe.Alias{AliasFP: dedupe.AliasFP{FP: fp}, Target: target, Type: typ, Extra: ip.title})
			}
		}
		if o.Text && status[i] == dedupe.StatusNew && target.FeedID == feedID && len(ip.bands) > 0 {
			// The bands share one value: built once, not once a band.
			extra := strconv.FormatUint(ip.sim, 16) + " " + ip.title
			for _, fp := range ip.bands {
				if !plan.shared[fp] {
					out = append(out, dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: feedID, FP: fp}, Target: target, Type: typ,
						Extra: extra, TTL: o.Window})
				}
			}
		}
	}
	return out
}

// repostMetrics count what matching blocked and what the flood guard holds.
type repostMetrics struct {
	blocked *prometheus.CounterVec
	held    *feedseries.Vec // by feed: compact series (docs/PERFORMANCE.md)
}

func newRepostMetrics(reg prometheus.Registerer) (*repostMetrics, error) {
	m := &repostMetrics{
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedworker_reposts_blocked_total",
			Help: "New items not posted because they are a known story under a new identity, by matcher: url, text, across_feeds.",
		}, []string{"match"}),
		held: feedseries.NewGauge("feedworker_items_held",
			"Items a feed's flood guard holds for feedworker release, by feed.", "feed"),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.blocked, m.held} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// planReposts runs matching for a fetch when the feed asks for it and the
// store keeps aliases; nil when it does not apply.
func (p *Publisher) planReposts(ctx context.Context, feedID string, kept []*transform.Payload, d dedupe.Diff, act []dedupe.Action, o FeedOptions, now time.Time) (*repostPlan, dedupe.AliasIndex, error) {
	ai, ok := p.store.(dedupe.AliasIndex)
	if !ok || o.ICal != nil || !o.Reposts.matching() || !o.BackfillSince.IsZero() {
		return nil, nil, nil
	}
	plan, err := p.matchReposts(ctx, ai, feedID, kept, d.Status, act, o.Reposts, d.Known, now)
	return plan, ai, err
}

// applyReposts records every matched item as seen only under its own
// identity, and returns the updates its targets of the same feed get:
// the repost under the target's identity, when that changes the target's
// hash (a PUT to its content); nothing when it is the same story as sent.
func (p *Publisher) applyReposts(feedID string, kept []*transform.Payload, act []dedupe.Action, plan *repostPlan, o FeedOptions) ([]dedupe.Change, error) {
	var out []dedupe.Change
	for i, m := range plan.matches {
		act[i] = dedupe.ActionSeeOnly
		if m.target.FeedID != feedID {
			if m.by == MatchAcross && o.Reposts.MergeCategories && m.merge == nil && hasCategories(kept[i]) {
				m.merge = &mergeInto{Target: m.target.String(), Categories: true}
				plan.matches[i] = m
			}
			if m.merge != nil {
				act[i] = dedupe.ActionPublish // a merge job, never a POST of its own
			}
			continue
		}
		as := kept[i].As(m.target.FeedID, m.target.ExternalID)
		if as.Hash == m.rec.Hash {
			continue
		}
		data, err := p.encode(&as, o)
		if err != nil {
			return nil, err
		}
		out = append(out, dedupe.Change{ExternalID: as.ExternalID, Hash: as.Hash, Type: as.Type, Action: dedupe.ActionPublish, Data: data})
	}
	return out, nil
}

// saveAliases stores the fetch's aliases after its commit. A failure
// costs matching, not delivery: it is logged, and the next poll with
// something new writes them again.
func (p *Publisher) saveAliases(ctx context.Context, ai dedupe.AliasIndex, feedID string, kept []*transform.Payload, status []dedupe.Status, plan *repostPlan, o RepostOptions, now time.Time) {
	as := aliasesOf(feedID, kept, status, plan, o)
	err := p.storeOp(ctx, "aliases", func(ctx context.Context) error { return ai.PutAliases(ctx, as, now) })
	if err != nil {
		p.log.Warn("storing repost aliases failed; the next poll with news stores them", "feed", feedID, "err", err)
	}
}

// RepostCounts count the new items of a fetch recognised as known
// stories, by matcher.
type RepostCounts struct {
	URL, Text, AcrossFeeds int
}

// Total is every repost counted.
func (r RepostCounts) Total() int { return r.URL + r.Text + r.AcrossFeeds }

func (plan *repostPlan) counts() RepostCounts {
	var out RepostCounts
	for _, m := range plan.matches {
		switch m.by {
		case MatchURL:
			out.URL++
		case MatchText:
			out.Text++
		case MatchAcross:
			out.AcrossFeeds++
		}
	}
	return out
}

func hasCategories(pl *transform.Payload) bool {
	return len(pl.CategoryNames) > 0 || len(pl.CategoryIDs) > 0
}

// mergeOf is the merge job item i is queued as; nil when none.
func (plan *repostPlan) mergeOf(i int) *mergeInto {
	m, _ := plan.match(i)
	return m.merge
}

// merges counts the items queued as merge jobs.
func (plan *repostPlan) merges() int {
	n := 0
	if plan != nil {
		for _, m := range plan.matches {
			if m.merge != nil {
				n++
			}
		}
	}
	return n
}

func (plan *repostPlan) match(i int) (repostMatch, bool) {
	if plan == nil {
		return repostMatch{}, false
	}
	m, ok := plan.matches[i]
	return m, ok
}

// reason is the item history's account of a match.
func (m repostMatch) reason() string {
	how := map[string]string{MatchURL: "link or GUID", MatchText: "title, day and text", MatchAcross: "link or GUID, in feed " + m.target.FeedID}[m.by]
	if m.rec.ContentID != 0 {
		return fmt.Sprintf("repost of content %d (matched by %s)", m.rec.ContentID, how)
	}
	return fmt.Sprintf("repost of item %s (matched by %s)", m.target, how)
}
