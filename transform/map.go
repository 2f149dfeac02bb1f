package transform

import (
	"fmt"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mmcdole/gofeed"
)

// Result is the outcome for one feed item. Exactly one of Payload, Skip and
// Err is set.
type Result struct {
	// Payload is the mapped item.
	Payload *Payload
	// Skip says why the item is not to be sent: a filter dropped it, or it
	// lacks what its type needs (an Event without a start date). Skipped
	// items are expected; they are not errors.
	Skip string
	// Err is set when the mapping itself failed for this item, such as a
	// rule expression that failed at run time.
	Err error

	// NeedsOGImage is set when the mapping has fetch_og_image and the item
	// has no image: the worker fetches Payload.ExternalURL's og:image (see
	// OGImageFetcher) and calls ResolveOGImage with what it found.
	NeedsOGImage bool
	// NeedsFullText is set when the mapping's full_text asks for the
	// article page: the worker fetches Payload.ExternalURL's main content
	// (package article) and calls ResolveFullText with it.
	NeedsFullText bool
	// Warning is a problem with the feed rather than the item, such as a
	// GUID used by several items; it is set on every result it concerns,
	// and the same text on each, so it can be logged once per feed.
	Warning string

	// SkippedID is the external id of a skipped calendar occurrence
	// (MapCalendar): it is still in the calendar, so it has not
	// disappeared from it.
	SkippedID string

	// requireImage: the mapping has require_image, which ResolveOGImage
	// applies once the og:image fetch is done.
	requireImage bool
}

// ResolveOGImage completes a result that needed an og:image: imageURL is
// what the fetch found ("" for nothing or a failed fetch). It sets the
// image (and so the hash), or turns the result into a skip when the
// mapping requires an image. It does nothing unless NeedsOGImage is set.
func (r *Result) ResolveOGImage(imageURL string) {
	if !r.NeedsOGImage || r.Payload == nil {
		return
	}
	r.NeedsOGImage = false
	if imageURL != "" && r.Payload.SetImage(imageURL) == nil {
		return
	}
	if r.requireImage {
		r.Payload, r.Skip = nil, "no image: require_image is set and the page has no og:image"
	}
}

// Map maps every item of feed, in feed order: one Result per item. now is
// used only by max_age; see the package comment for why payloads never
// depend on it.
//
// The whole feed is mapped at once so that identities can be checked
// across items: when two items share a GUID, every item of the feed gets a
// link-based external id instead (with a Warning), and when two items still
// share an external id, the later ones are skipped as duplicates.
func (m *Mapping) Map(feed *gofeed.Feed, now time.Time) []Result {
	if feed == nil || len(feed.Items) == 0 {
		return nil
	}
	now = now.UTC()
	feedBase := parseBase(feed.Link)
	if feedBase == nil {
		feedBase = parseBase(feed.FeedLink)
	}

	// Identity first: it needs every item's key before any is used.
	links := make([]string, len(feed.Items))
	cand := make([]itemKeys, len(feed.Items))
	for i, item := range feed.Items {
		if item == nil {
			continue
		}
		raw := itemLink(item, feedBase)
		links[i] = canonicalLink(raw, feedBase)
		cand[i] = keysFor(item, identityLink(raw, feedBase))
	}
	keys, warning := assignKeys(cand)

	results := make([]Result, len(feed.Items))
	ids := make([]string, len(feed.Items))
	seen := make(map[string]int, len(feed.Items))
	for i, item := range feed.Items {
		r := &results[i]
		r.Warning = warning
		if item == nil {
			r.Skip = "empty: nil item"
			continue
		}
		id := externalID(m.feedID, keys[i])
		if j, dup := seen[id]; dup {
			r.Skip = fmt.Sprintf("duplicate: same external id %s as item %d of this feed", id, j+1)
			continue
		}
		seen[id] = i
		ids[i] = id
	}
	mapSpans(len(feed.Items), func(lo, hi int) {
		// A span's own zones and scratch memory: spans run at once.
		zones := map[string]*time.Location{}
		sc := newScratch(m.sanitizer)
		for i := lo; i < hi; i++ {
			if ids[i] != "" {
				sc.reset()
				m.mapItem(&results[i], feed, feed.Items[i], ids[i], links[i], feedBase, now, zones, nil, sc)
			}
		}
	})
	return results
}

// parallelMin is the number of items below which a feed is mapped on one
// goroutine. Polls of different feeds already run side by side; a single
// huge feed (the quickstart's 100,000 items took most of a core for
// seconds while the other sat idle) is cut into spans mapped at once.
const parallelMin = 2048

// mapSpans calls fn over [0, n) cut into one span per CPU (a single span
// below parallelMin), and returns when every call has. Each item is
// mapped independently of the others; a panic in a span is raised again
// here, in the caller's goroutine, where the worker's recover expects it.
func mapSpans(n int, fn func(lo, hi int)) {
	spans := min(runtime.GOMAXPROCS(0), n/(parallelMin/2))
	if n < parallelMin || spans < 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	panics := make([]any, spans)
	for k := range spans {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					panics[k] = spanPanic{r, debug.Stack()}
				}
			}()
			fn(k*n/spans, (k+1)*n/spans)
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

// spanPanic is a span's panic with the stack of the goroutine it happened
// on, which the caller's own stack no longer shows.
type spanPanic struct {
	val   any
	stack []byte
}

// String is the value alone: it becomes the poll's error, which the
// history stores and the console shows.
func (p spanPanic) String() string { return fmt.Sprint(p.val) }

// Stack is where it happened, for the log.
func (p spanPanic) Stack() []byte { return p.stack }

// itemData holds what the steps of one item share.
type itemData struct {
	link             string // canonical
	base             *url.URL
	fullTitle        string // plain text, not capped
	descriptionText  string // plain text of the description, not capped
	sourceCategories []string
	bodySrc          string
	body             *content // parsed on first use
	desc             *content // parsed on first use; nil when the body is the description
	descIsBody       bool
	sc               *scratch // nil: each parse has its own
}

func (d *itemData) bodyContent() *content {
	if d.body == nil {
		d.body = d.parse(d.bodySrc)
	}
	return d.body
}

func (d *itemData) parse(src string) *content {
	if d.sc == nil {
		return parseContent(src, d.base)
	}
	return parseContentIn(d.sc, src, d.base)
}

// gofeedImage is the Item.Image gofeed's RSS translator would have found
// in the item's HTML (its content, else its description: the first <img>
// with a src), read from the trees parsed here; feeds turns gofeed's own
// scan off so that each body is parsed once.
func (d *itemData) gofeedImage(item *gofeed.Item, desc func() *content) *gofeed.Image {
	if strings.TrimSpace(item.Content) != "" {
		if b := d.bodyContent(); b.hasFirstSrc {
			return &gofeed.Image{URL: b.firstSrc}
		}
	}
	if strings.TrimSpace(item.Description) == "" {
		return nil
	}
	c := d.bodyContent()
	if !d.descIsBody {
		c = desc() // nil when the description holds no markup
	}
	if c != nil && c.hasFirstSrc {
		return &gofeed.Image{URL: c.firstSrc}
	}
	return nil
}

// mapItem runs the steps of the package comment for one item. ev, when
// not nil, is an event read already (an iCalendar VEVENT): the item is an
// Event with those fields, whatever the type settings say. sc, when not
// nil, is memory shared by the caller's items (reset before each), for
// parsing and sanitizing the item's bodies.
func (m *Mapping) mapItem(r *Result, feed *gofeed.Feed, item *gofeed.Item, id, link string, feedBase *url.URL, now time.Time, zones map[string]*time.Location, ev *Event, sc *scratch) {
	d := &itemData{link: link, base: feedBase, sc: sc}
	// URLs in the content resolve against the item's page; gofeed has
	// already resolved Atom content against xml:base.
	if b := parseBase(link); b != nil {
		d.base = b
	}

	// Texts. The body is the content, else the description.
	contentSrc, description := strings.TrimSpace(item.Content), strings.TrimSpace(item.Description)
	if description == "" {
		// Video feeds (YouTube, Vimeo) keep their text in Media RSS.
		description = mediaDescription(item)
	}
	d.bodySrc = contentSrc
	if d.bodySrc == "" {
		d.bodySrc, d.descIsBody = description, true
	}
	d.fullTitle = plainText(item.Title)
	if d.descIsBody {
		d.descriptionText = d.bodyContent().text()
	} else {
		d.descriptionText = plainText(description)
	}
	d.sourceCategories = sourceCategories(item)
	descContent := func() *content {
		if d.descIsBody || description == "" || !looksLikeHTML(description) {
			return nil
		}
		if d.desc == nil {
			d.desc = d.parse(description)
		}
		return d.desc
	}

	// Ads posing as items, then content type, then filters: nothing below
	// is spent on dropped items.
	if isAdItemLink(link) {
		r.Skip = "ad: the item links to an ad server"
		return
	}
	var env *ruleEnv
	if len(m.typeRules) > 0 || len(m.categoryRules) > 0 {
		env = newRuleEnv(feed, item, d)
	}
	typ := m.typ
	if len(m.typeRules) > 0 {
		t, err := m.pickType(env)
		if err != nil {
			r.Err = err
			return
		}
		typ = t
	}
	if ev != nil {
		typ = TypeEvent
	}
	published := itemDate(item.PublishedParsed, item.UpdatedParsed, item.Published, item.Updated)
	if skip := m.filterItem(item, d, published, now); skip != "" {
		r.Skip = skip
		return
	}

	p := &Payload{
		Type:           typ,
		FeedID:         m.feedID,
		ExternalID:     id,
		ExternalURL:    link,
		GUID:           strings.TrimSpace(item.GUID),
		MoreButtonText: m.static.moreButtonText,
		PublishDate:    published,
	}
	if typ == TypeLink && link == "" {
		r.Skip = "no link: a link item needs one"
		return
	}

	// Title and summary. An item without a title is named by its text.
	summaryText := d.descriptionText
	if summaryText == "" || sameText(summaryText, d.fullTitle) {
		if !d.descIsBody {
			summaryText = d.bodyContent().text()
		}
	}
	p.Title = truncate(d.fullTitle, m.titleMax)
	if p.Title == "" {
		p.Title = truncate(summaryText, min(m.titleMax, derivedTitleMax))
	}
	if p.Title == "" {
		r.Skip = "no title: the item has no title and no text"
		return
	}
	// Compared after capping too: a short cap can cut a longer text down
	// to the title made from it.
	if s := truncate(summaryText, m.summaryMax); !sameText(summaryText, d.fullTitle) && !sameText(s, p.Title) {
		p.Summary = s
	}

	// Image. Without one, the og:image of the page may still come (the
	// worker fetches it); require_image then waits for ResolveOGImage.
	img := item.Image
	if img == nil && feed != nil && feed.FeedType == "rss" {
		img = d.gofeedImage(item, descContent)
	}
	p.ImageURL = pickImage(item, img, d.bodyContent, descContent, d.base)
	needsOG := m.fetchOGImage && p.ImageURL == "" && link != ""
	if p.ImageURL == "" && m.requireImage && !needsOG {
		r.Skip = "no image: require_image is set"
		return
	}

	// Categories.
	names := slices.Clone(m.categories)
	for _, c := range d.sourceCategories {
		mapped, ok := m.categoryMap[strings.ToLower(c)]
		switch {
		case ok && mapped != "":
			names = append(names, mapped)
		case !ok && m.passUnmapped:
			names = append(names, c)
		}
	}
	if len(m.categoryRules) > 0 {
		extra, err := m.ruleCategories(env)
		if err != nil {
			r.Err = err
			return
		}
		names = append(names, extra...)
	}
	p.CategoryNames = dedupeFold(names)
	p.CategoryIDs = dedupeIDs(m.categoryIDs)

	// Static fields and derived dates.
	s := m.static
	p.AuthorID, p.PriorityID, p.StatusID = copyPtr(s.authorID), copyPtr(s.priorityID), copyPtr(s.statusID)
	p.Private, p.ExclusiveToSegment, p.AvailableInPartner = copyPtr(s.private), copyPtr(s.exclusiveToSegment), copyPtr(s.availableInPartner)
	p.EnableComments, p.EnableLinkTracking, p.Evergreen = copyPtr(s.enableComments), copyPtr(s.enableLinkTracking), copyPtr(s.evergreen)
	p.Segments = slices.Clone(s.segments)
	p.applyDateRules(m.DateRules())

	// Type-specific fields.
	switch typ {
	case TypeEvent:
		if ev == nil {
			var skip string
			if ev, skip = m.eventFields(item, d.base, zones); skip != "" {
				r.Skip = skip
				return
			}
		}
		p.Event = ev
	case TypeNeed:
		n, skip := m.needFields(item, p.PublishDate)
		if skip != "" {
			r.Skip = skip
			return
		}
		p.Need = n
	}

	// Sanitize last, then hash.
	if sc != nil {
		sc.bodies.add(d.bodyContent(), &p.Body, p)
	} else {
		p.Body = m.sanitizer.sanitize(d.bodyContent())
		p.Hash = p.computeHash()
	}
	r.Payload = p
	r.requireImage = m.requireImage
	r.NeedsOGImage = needsOG
	if m.fullText.mode != FullTextNever {
		r.NeedsFullText = m.fullText.wants(d.bodyContent().text(), link)
	}
}

// isAdItemLink reports an item whose (canonical) link is an ad's.
func isAdItemLink(link string) bool {
	if link == "" {
		return false
	}
	if host, path, ok := plainURL(link); ok {
		return isAdHost(host, path)
	}
	u, err := url.Parse(link)
	return err == nil && isAdLink(u)
}

// derivedTitleMax caps a title made from the item's text: a headline, not
// a paragraph.
const derivedTitleMax = 100

// itemLink returns the item's link as written: FeedBurner's and Pheedo's
// original link when present, else the link, the first other link, or a
// GUID that is a URL; the first of them that is an http(s) URL. Links
// through a feed service's redirector come last: they hide the article's
// address and stop working when the service does.
func itemLink(item *gofeed.Item, feedBase *url.URL) string {
	var candidates, redirected []string
	for _, prefix := range []string{"feedburner", "pheedo"} {
		candidates = append(candidates, extValues(item.Extensions, prefix, "origLink")...)
	}
	for _, l := range append([]string{item.Link}, item.Links...) {
		if host, path, ok := absoluteHost(l, feedBase); ok && isRedirector(host, path) {
			redirected = append(redirected, l)
		} else {
			candidates = append(candidates, l)
		}
	}
	if g := strings.TrimSpace(item.GUID); strings.HasPrefix(g, "http://") || strings.HasPrefix(g, "https://") {
		candidates = append(candidates, g)
	}
	for _, c := range append(candidates, redirected...) {
		if _, _, ok := absoluteHost(c, feedBase); ok {
			return c
		}
	}
	return ""
}

// isRedirector reports links through a feed service's click counter, by
// their host name and path.
func isRedirector(host, path string) bool {
	host = strings.ToLower(host)
	switch {
	case strings.HasSuffix(host, "feedsportal.com"), host == "feedproxy.google.com":
		return true
	case strings.HasPrefix(host, "feeds.") && strings.HasPrefix(path, "/~r/"):
		return true
	}
	return false
}

// mediaDescription returns the Media RSS description of an item, at the
// top level or in a media:group.
func mediaDescription(item *gofeed.Item) string {
	for _, path := range []extPath{
		{raw: "media:description", prefix: "media", names: []string{"description"}},
		{raw: "media:group/media:description", prefix: "media", names: []string{"group", "description"}},
	} {
		if v := path.value(item); v != "" {
			return v
		}
	}
	return ""
}

// sourceCategories are the item's own categories, as plain text, without
// repeats, plus ev:type, which names an event's kind.
func sourceCategories(item *gofeed.Item) []string {
	var out []string
	for _, c := range item.Categories {
		if c = plainText(c); c != "" {
			out = append(out, c)
		}
	}
	out = append(out, extValues(item.Extensions, "ev", "type")...)
	return dedupeFold(out)
}

// dedupeFold drops empty names and repeats that differ only in case,
// keeping the first spelling and the order.
func dedupeFold(names []string) []string {
	var out []string
	seen := make(map[string]bool, len(names)) // a hostile feed may send thousands
	for _, n := range names {
		n = strings.TrimSpace(n)
		key := strings.ToLower(n)
		if n == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, n)
	}
	return out
}

func dedupeIDs(ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func authorName(item *gofeed.Item) string {
	if item.Author != nil && item.Author.Name != "" {
		return plainText(item.Author.Name)
	}
	for _, a := range item.Authors {
		if a != nil && a.Name != "" {
			return plainText(a.Name)
		}
	}
	if item.DublinCoreExt != nil && len(item.DublinCoreExt.Creator) > 0 {
		return plainText(item.DublinCoreExt.Creator[0])
	}
	return ""
}
