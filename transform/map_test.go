package transform

import (
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/config"
)

var testNow = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func parseFeed(t testing.TB, doc string) *gofeed.Feed {
	t.Helper()
	f, err := gofeed.NewParser().ParseString(doc)
	if err != nil {
		t.Fatalf("parse test feed: %v", err)
	}
	return f
}

// rss wraps items in an RSS 2.0 document with the namespaces tests use.
func rss(items string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"
 xmlns:media="http://search.yahoo.com/mrss/" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
 xmlns:ev="http://purl.org/rss/1.0/modules/event/" xmlns:xCal="urn:ietf:params:xml:ns:xcal"
 xmlns:g="http://base.google.com/ns/1.0" xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0">
<channel><title>Test feed</title><link>https://example.org/</link><description>d</description>
` + items + `
</channel></rss>`
}

// mapOne maps a one-item RSS feed and returns its result.
func mapOne(t *testing.T, m *Mapping, item string) Result {
	t.Helper()
	rs := m.Map(parseFeed(t, rss(item)), testNow)
	if len(rs) != 1 {
		t.Fatalf("got %d results, want 1", len(rs))
	}
	return rs[0]
}

func mustPayload(t *testing.T, r Result) *Payload {
	t.Helper()
	if r.Payload == nil {
		t.Fatalf("no payload: skip %q, error %v", r.Skip, r.Err)
	}
	return r.Payload
}

func TestTypeRules(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", func(c *config.Mapping) {
		c.Type = "link"
		c.TypeRules = []config.TypeRule{
			{When: `has_category("events")`, Type: "event"},
			{When: `link contains "/needs/"`, Type: "need"},
			{When: `title matches "(?i)^story:"`, Type: "story"},
			{When: `ext("g:kind") == "volunteer"`, Type: "need"},
		}
		c.Need = &config.NeedFields{DefaultQuantity: ptr(1)}
	})
	tests := []struct{ name, item, want string }{
		{"category, any case", `<item><title>a</title><link>https://example.org/a</link><category>EVENTS</category><ev:startdate>2024-05-01</ev:startdate></item>`, TypeEvent},
		{"link", `<item><title>b</title><link>https://example.org/needs/1</link></item>`, TypeNeed},
		{"title", `<item><title>Story: c</title><link>https://example.org/c</link></item>`, TypeStory},
		{"extension", `<item><title>d</title><link>https://example.org/d</link><g:kind>volunteer</g:kind></item>`, TypeNeed},
		{"no rule: feed type", `<item><title>e</title><link>https://example.org/e</link></item>`, TypeLink},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustPayload(t, mapOne(t, m, tc.item)).Type; got != tc.want {
				t.Errorf("type: got %q, want %q", got, tc.want)
			}
		})
	}

	// A rule failing at run time is the item's error, naming the rule.
	bad := mustCompile(t, "f", func(c *config.Mapping) {
		c.TypeRules = []config.TypeRule{{When: `categories[3] == "x"`, Type: "link"}}
	})
	r := mapOne(t, bad, `<item><title>a</title><link>https://example.org/a</link></item>`)
	if r.Err == nil || !strings.HasPrefix(r.Err.Error(), "type_rules[0].when: ") || r.Payload != nil {
		t.Errorf("runtime error: got %+v", r)
	}
}

func TestStaticFieldsAndDates(t *testing.T) {
	t.Parallel()
	week, day := config.Duration(7*24*time.Hour), config.Duration(24*time.Hour)
	m := mustCompile(t, "f", func(c *config.Mapping) {
		c.AuthorID, c.PriorityID, c.StatusID = ptr(int64(7)), ptr(int64(2)), ptr(int64(1))
		c.Private, c.ExclusiveToSegment, c.AvailableInPartner = ptr(true), ptr(false), ptr(true)
		c.EnableComments, c.EnableLinkTracking, c.Evergreen = ptr(false), ptr(true), ptr(false)
		c.Segments = []int64{3, 4}
		c.MoreButtonText = ptr(" Read more ")
		c.ExpireAfter, c.PriorityFor = &week, &day
		c.CategoryIDs = []int64{9, 9, 10}
	})
	p := mustPayload(t, mapOne(t, m, `<item><title>a</title><link>https://example.org/a</link><pubDate>Fri, 01 Mar 2024 08:30:00 +0100</pubDate></item>`))
	pub := time.Date(2024, 3, 1, 7, 30, 0, 0, time.UTC)
	want := &Payload{
		Type: TypeStory, FeedID: "f", ExternalID: p.ExternalID, Title: "a",
		ExternalURL: "https://example.org/a", MoreButtonText: "Read more",
		PublishDate: pub, ExpirationDate: pub.Add(7 * 24 * time.Hour), PriorityUntil: pub.Add(24 * time.Hour),
		CategoryIDs: []int64{9, 10},
		AuthorID:    ptr(int64(7)), PriorityID: ptr(int64(2)), StatusID: ptr(int64(1)), Segments: []int64{3, 4},
		Private: ptr(true), ExclusiveToSegment: ptr(false), AvailableInPartner: ptr(true),
		EnableComments: ptr(false), EnableLinkTracking: ptr(true), Evergreen: ptr(false),
		Hash: p.Hash,
	}
	if diff := gocmp.Diff(want, p); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}

	// Without a date: everything date-derived stays zero (the publisher
	// fills the first-seen time), so the hash does not depend on the clock.
	noDate := `<item><title>b</title><link>https://example.org/b</link></item>`
	p1 := mustPayload(t, m.Map(parseFeed(t, rss(noDate)), testNow)[0])
	p2 := mustPayload(t, m.Map(parseFeed(t, rss(noDate)), testNow.Add(72*time.Hour))[0])
	if !p1.PublishDate.IsZero() || !p1.ExpirationDate.IsZero() || !p1.PriorityUntil.IsZero() {
		t.Errorf("dates of an undated item: %v %v %v", p1.PublishDate, p1.ExpirationDate, p1.PriorityUntil)
	}
	if p1.Hash != p2.Hash {
		t.Error("the hash of an undated item changed with the clock")
	}

	// ForSend fills the first-seen time, clamps the future, keeps the hash.
	seen := testNow.Add(-time.Hour)
	s := p1.ForSend(seen, testNow, m.DateRules())
	if !s.PublishDate.Equal(seen) || !s.ExpirationDate.Equal(seen.Add(7*24*time.Hour)) || !s.PriorityUntil.Equal(seen.Add(24*time.Hour)) || s.Hash != p1.Hash {
		t.Errorf("ForSend of an undated item: %+v", s)
	}
	if !p1.PublishDate.IsZero() {
		t.Error("ForSend changed its receiver")
	}
	future := `<item><title>c</title><link>https://example.org/c</link><pubDate>Mon, 01 Jan 2035 00:00:00 GMT</pubDate></item>`
	pf := mustPayload(t, mapOne(t, m, future))
	if pf.PublishDate.Year() != 2035 {
		t.Errorf("Map clamped a future date: %v (clamping is ForSend's)", pf.PublishDate)
	}
	if s := pf.ForSend(seen, testNow, m.DateRules()); !s.PublishDate.Equal(testNow) || !s.ExpirationDate.Equal(testNow.Add(7*24*time.Hour)) {
		t.Errorf("ForSend of a future item: %v %v", s.PublishDate, s.ExpirationDate)
	}
}

func TestItemDates(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	tests := []struct {
		name, item string
		want       time.Time
	}{
		{"pubDate", `<item><title>a</title><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>`, time.Date(2003, 6, 10, 4, 0, 0, 0, time.UTC)},
		{"dc:date", `<item><title>a</title><dc:date xmlns:dc="http://purl.org/dc/elements/1.1/">2003-06-10T06:00:00+02:00</dc:date></item>`, time.Date(2003, 6, 10, 4, 0, 0, 0, time.UTC)},
		{"zone abbreviation", `<item><title>a</title><pubDate>Mon, 21 Jan 2008 8:56 am PST</pubDate></item>`, time.Date(2008, 1, 21, 16, 56, 0, 0, time.UTC)},
		{"none", `<item><title>a</title></item>`, time.Time{}},
		{"garbage", `<item><title>a</title><pubDate>soon</pubDate></item>`, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPayload(t, mapOne(t, m, tc.item))
			if !p.PublishDate.Equal(tc.want) || p.PublishDate.Location() != time.UTC {
				t.Errorf("publish date: got %v, want %v", p.PublishDate, tc.want)
			}
		})
	}
	// Atom: published, else updated.
	atom := parseFeed(t, `<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>
<entry><id>1</id><title>a</title><updated>2020-01-02T00:00:00Z</updated></entry>
<entry><id>2</id><title>b</title><published>2020-01-01T00:00:00Z</published><updated>2020-01-03T00:00:00Z</updated></entry></feed>`)
	rs := m.Map(atom, testNow)
	if got := mustPayload(t, rs[0]).PublishDate; !got.Equal(time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("updated only: %v", got)
	}
	if got := mustPayload(t, rs[1]).PublishDate; !got.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("published and updated: %v", got)
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	month := config.Duration(30 * 24 * time.Hour)
	items := map[string]string{
		"golang":   `<item><title>Go 1.22 released</title><link>https://example.org/go</link><pubDate>Thu, 29 Feb 2024 00:00:00 GMT</pubDate><description>Loop variables</description></item>`,
		"sponsor":  `<item><title>A word from our SPONSOR</title><link>https://example.org/ad</link><pubDate>Thu, 29 Feb 2024 00:00:00 GMT</pubDate></item>`,
		"old":      `<item><title>Go 1.0 released</title><link>https://example.org/old</link><pubDate>Wed, 28 Mar 2012 00:00:00 GMT</pubDate></item>`,
		"undated":  `<item><title>Rust news</title><link>https://example.org/rust</link><content:encoded><![CDATA[<p>About <b>golang</b> too</p>]]></content:encoded></item>`,
		"imaged":   `<item><title>Photo</title><link>https://example.org/photo</link><enclosure url="https://example.org/p.jpg" type="image/jpeg" length="1"/></item>`,
		"patterns": `<item><title>Release v2.3.4</title><link>https://example.org/v</link><category>Releases</category></item>`,
	}
	tests := []struct {
		name string
		edit func(*config.Mapping)
		kept []string
	}{
		{"none", nil, []string{"golang", "imaged", "old", "patterns", "sponsor", "undated"}},
		{"exclude keyword, any case", func(c *config.Mapping) { c.Exclude = &config.Filter{Keywords: []string{"Sponsor"}} }, []string{"golang", "imaged", "old", "patterns", "undated"}},
		{"include keyword in body text, not markup", func(c *config.Mapping) { c.Include = &config.Filter{Keywords: []string{"golang"}} }, []string{"undated"}},
		{"include on title only", func(c *config.Mapping) {
			c.Include = &config.Filter{Keywords: []string{"go "}, Fields: []string{"title"}}
		}, []string{"golang", "old"}},
		{"include pattern", func(c *config.Mapping) { c.Include = &config.Filter{Patterns: []string{`v\d+\.\d+\.\d+`}} }, []string{"patterns"}},
		{"exclude by category", func(c *config.Mapping) {
			c.Exclude = &config.Filter{Keywords: []string{"releases"}, Fields: []string{"categories"}}
		}, []string{"golang", "imaged", "old", "sponsor", "undated"}},
		{"max_age keeps undated items", func(c *config.Mapping) { c.MaxAge = &month }, []string{"golang", "imaged", "patterns", "sponsor", "undated"}},
		{"require_image", func(c *config.Mapping) { c.RequireImage = ptr(true) }, []string{"imaged"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCompile(t, "f", tc.edit)
			var kept []string
			for _, name := range sortedKeys(items) {
				r := mapOne(t, m, items[name])
				if r.Err != nil {
					t.Fatalf("%s: %v", name, r.Err)
				}
				if r.Payload != nil {
					kept = append(kept, name)
				} else if r.Skip == "" {
					t.Errorf("%s: neither payload nor skip reason", name)
				}
			}
			if diff := gocmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("kept items (-want +got):\n%s", diff)
			}
		})
	}
	m := mustCompile(t, "f", func(c *config.Mapping) { c.Exclude = &config.Filter{Keywords: []string{"sponsor"}} })
	if r := mapOne(t, m, items["sponsor"]); r.Skip != `excluded: keyword "sponsor" in title` {
		t.Errorf("skip reason: %q", r.Skip)
	}
}

func TestCategories(t *testing.T) {
	t.Parallel()
	item := `<item><title>Webinar: intro</title><link>https://example.org/a</link>
<category>Tech</category><category>tech</category><category>Local &amp; Regional</category><category>Misc</category><category>Uncategorized</category></item>`
	tests := []struct {
		name string
		edit func(*config.Mapping)
		want []string
	}{
		{"dropped unless mapped", nil, nil},
		{"static names", func(c *config.Mapping) { c.Categories = []string{"News"} }, []string{"News"}},
		{"mapped, source compared in any case", func(c *config.Mapping) {
			c.CategoryMap = map[string]string{"TECH": "Technology", "local & regional": "Local"}
		}, []string{"Technology", "Local"}},
		{"pass-through of unmapped, mapping to empty drops", func(c *config.Mapping) {
			c.CategoryMap = map[string]string{"uncategorized": "", "misc": "News"}
			c.PassUnmappedCategories = ptr(true)
		}, []string{"Tech", "Local & Regional", "News"}},
		{"rules add, repeats go", func(c *config.Mapping) {
			c.Categories = []string{"Events"}
			c.CategoryRules = []config.CategoryRule{
				{When: `title startsWith "Webinar"`, Categories: []string{"Webinars", "events"}},
				{When: `has_category("nothing")`, Categories: []string{"Never"}},
			}
		}, []string{"Events", "Webinars"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPayload(t, mapOne(t, mustCompile(t, "f", tc.edit), item))
			if diff := gocmp.Diff(tc.want, p.CategoryNames); diff != "" {
				t.Errorf("categories (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTitleAndSummary(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", func(c *config.Mapping) {
		c.TitleMax, c.SummaryMax = ptr(30), ptr(60)
	})
	tests := []struct {
		name, item, title, summary string
	}{
		{
			name:    "entities, tags and spaces",
			item:    `<item><title><![CDATA[ AT&amp;T  <b>buys</b>&nbsp;“Time”  ]]></title><description>Plain &lt;i&gt;text&lt;/i&gt;.</description></item>`,
			title:   "AT&T buys “Time”",
			summary: "Plain text.",
		},
		{
			name:    "double-escaped title",
			item:    `<item><title>Tom &amp;amp; Jerry &amp;lt;3</title></item>`,
			title:   "Tom & Jerry <3",
			summary: "",
		},
		{
			name:    "capped on a word boundary",
			item:    `<item><title>The quick brown fox jumps over the lazy dog again</title><description>One two three four five six seven eight nine ten eleven twelve thirteen fourteen</description></item>`,
			title:   "The quick brown fox jumps…",
			summary: "One two three four five six seven eight nine ten eleven…",
		},
		{
			name:    "summary from content when there is no description",
			item:    `<item><title>T</title><content:encoded><![CDATA[<p>From</p><p>content</p><script>x()</script>]]></content:encoded></item>`,
			title:   "T",
			summary: "From content",
		},
		{
			name:    "summary repeating the title is replaced by content",
			item:    `<item><title>Same words</title><description>Same words.</description><content:encoded>Other words</content:encoded></item>`,
			title:   "Same words",
			summary: "Other words",
		},
		{
			name:    "summary repeating the title and nothing else: none",
			item:    `<item><title>Same words</title><description>SAME WORDS</description></item>`,
			title:   "Same words",
			summary: "",
		},
		{
			name:    "Media RSS description, as video feeds have",
			item:    `<item><title>Video</title><media:group><media:title>Video</media:title><media:description>What the video shows</media:description></media:group></item>`,
			title:   "Video",
			summary: "What the video shows",
		},
		{
			name:    "no title: made from the text",
			item:    `<item><description>Only a description here, which is long enough to be cut</description></item>`,
			title:   "Only a description here…", // no comma before the ellipsis
			summary: "Only a description here, which is long enough to be cut",
		},
		{
			name:    "text without spaces is cut at a character",
			item:    `<item><title>日本語のタイトルはとても長いのでここで切る必要がありますね本当に長い</title></item>`,
			title:   "日本語のタイトルはとても長いのでここで切る必要がありますね…",
			summary: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPayload(t, mapOne(t, m, tc.item))
			if p.Title != tc.title || p.Summary != tc.summary {
				t.Errorf("got title %q summary %q\nwant title %q summary %q", p.Title, p.Summary, tc.title, tc.summary)
			}
		})
	}
	if r := mapOne(t, m, `<item><link>https://example.org/x</link></item>`); r.Skip == "" {
		t.Errorf("item without title or text: got %+v, want a skip", r)
	}
}

func TestBodySourceAndRelativeURLs(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	t.Run("content:encoded wins over description", func(t *testing.T) {
		p := mustPayload(t, mapOne(t, m, `<item><title>a</title><link>https://example.org/posts/a</link>
<description>short</description><content:encoded><![CDATA[<p>full <a href="b">text</a></p>]]></content:encoded></item>`))
		if want := `<p>full <a href="https://example.org/posts/b" rel="nofollow noopener" target="_blank">text</a></p>`; p.Body != want {
			t.Errorf("body: got %q, want %q", p.Body, want)
		}
	})
	t.Run("description when no content; relative to the item link", func(t *testing.T) {
		p := mustPayload(t, mapOne(t, m, `<item><title>a</title><link>https://example.org/posts/a</link><description>&lt;img src="/i/a.png"&gt;</description></item>`))
		if want := `<img src="https://example.org/i/a.png"/>`; p.Body != want {
			t.Errorf("body: got %q, want %q", p.Body, want)
		}
	})
	t.Run("relative item link resolves against the feed link", func(t *testing.T) {
		p := mustPayload(t, mapOne(t, m, `<item><title>a</title><link>/posts/a?utm_source=rss</link><description>&lt;a href="b"&gt;b&lt;/a&gt;</description></item>`))
		if p.ExternalURL != "https://example.org/posts/a" || !strings.Contains(p.Body, `href="https://example.org/posts/b"`) {
			t.Errorf("link %q body %q", p.ExternalURL, p.Body)
		}
	})
	t.Run("atom xml:base", func(t *testing.T) {
		feed := parseFeed(t, `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://base.example/root/"><title>t</title>
<link href="https://site.example/"/>
<entry xml:base="entries/"><id>1</id><title>a</title><link href="one.html"/>
<content type="html" xml:base="https://cdn.example/media/">&lt;img src="pic.jpg"&gt;&lt;a href="../page"&gt;p&lt;/a&gt;</content></entry>
<entry><id>2</id><title>b</title><link href="https://site.example/two"/>
<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><a href="rel/x">x</a></div></content></entry>
</feed>`)
		rs := m.Map(feed, testNow)
		p0, p1 := mustPayload(t, rs[0]), mustPayload(t, rs[1])
		if p0.ExternalURL != "https://base.example/root/entries/one.html" {
			t.Errorf("entry 1 link: %q", p0.ExternalURL)
		}
		if want := `<img src="https://cdn.example/media/pic.jpg"/><a href="https://cdn.example/page" rel="nofollow noopener" target="_blank">p</a>`; p0.Body != want {
			t.Errorf("entry 1 body: got %q, want %q", p0.Body, want)
		}
		if p0.ImageURL != "https://cdn.example/media/pic.jpg" {
			t.Errorf("entry 1 image: %q", p0.ImageURL)
		}
		if want := `<a href="https://base.example/root/rel/x" rel="nofollow noopener" target="_blank">x</a>`; p1.Body != want {
			t.Errorf("entry 2 body: got %q, want %q", p1.Body, want)
		}
	})
	t.Run("no base at all: relative links lose their href", func(t *testing.T) {
		feed := parseFeed(t, `<rss version="2.0"><channel><title>t</title><item><title>a</title><description>&lt;a href="x"&gt;x&lt;/a&gt; &lt;a href="https://ok.example/"&gt;ok&lt;/a&gt;</description></item></channel></rss>`)
		p := mustPayload(t, m.Map(feed, testNow)[0])
		if want := `x <a href="https://ok.example/" rel="nofollow noopener" target="_blank">ok</a>`; p.Body != want {
			t.Errorf("body: got %q, want %q", p.Body, want)
		}
	})
}

func TestImage(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	tests := []struct{ name, item, want string }{
		{"image enclosure first", `<item><title>a</title><link>https://example.org/a</link>
<enclosure url="https://example.org/ep.mp3" type="audio/mpeg" length="1"/><enclosure url="/cover.png" type="image/png" length="1"/>
<media:thumbnail url="https://example.org/thumb.jpg"/></item>`, "https://example.org/cover.png"},
		{"largest media", `<item><title>a</title><link>https://example.org/a</link>
<media:group><media:thumbnail url="https://example.org/s.jpg" width="120" height="90"/><media:thumbnail url="https://example.org/l.jpg" width="640" height="480"/></media:group>
<media:content url="https://example.org/m.jpg" medium="image" width="320" height="240"/><media:content url="https://example.org/v.mp4" medium="video" width="1920" height="1080"/></item>`, "https://example.org/l.jpg"},
		{"itunes:image", `<item><title>a</title><link>https://example.org/a</link><itunes:image href="https://example.org/art.jpg"/></item>`, "https://example.org/art.jpg"},
		{"content image, skipping pixels and icons", `<item><title>a</title><link>https://example.org/a</link><content:encoded><![CDATA[
<img src="http://feeds.feedburner.com/~r/x/~4/y" width="1" height="1"><img src="/icon.png" width="16" height="16"><img src="https://s.w.org/images/core/emoji/1.png"><img src="photo.jpg" width="600">]]></content:encoded></item>`, "https://example.org/photo.jpg"},
		{"image in the description when the content has none", `<item><title>a</title><link>https://example.org/a</link>
<description>&lt;img src="https://example.org/d.jpg"&gt;</description><content:encoded>text</content:encoded></item>`, "https://example.org/d.jpg"},
		{"gofeed's pick refused when it is a pixel", `<item><title>a</title><link>https://example.org/a</link>
<description>&lt;img src="https://t.example/p.gif" width="1" height="1"&gt; text</description></item>`, ""},
		{"never a non-http URL", `<item><title>a</title><link>https://example.org/a</link><itunes:image href="ftp://example.org/a.jpg"/><content:encoded><![CDATA[<img src="data:image/png;base64,AAAA">]]></content:encoded></item>`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustPayload(t, mapOne(t, m, tc.item)).ImageURL; got != tc.want {
				t.Errorf("image: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOGImageFlow(t *testing.T) {
	t.Parallel()
	noImage := `<item><title>a</title><link>https://example.org/a</link></item>`
	m := mustCompile(t, "f", func(c *config.Mapping) { c.FetchOGImage = ptr(true) })
	r := mapOne(t, m, noImage)
	if !r.NeedsOGImage || r.Payload == nil {
		t.Fatalf("want a payload needing an og:image, got %+v", r)
	}
	before := r.Payload.Hash
	r.ResolveOGImage("https://cdn.example/og.jpg")
	if r.NeedsOGImage || r.Payload.ImageURL != "https://cdn.example/og.jpg" || r.Payload.Hash == before || r.Payload.Hash != r.Payload.computeHash() {
		t.Errorf("after ResolveOGImage: %+v", r.Payload)
	}
	if err := r.Payload.SetImage("javascript:alert(1)"); err == nil {
		t.Error("SetImage accepted a javascript: URL")
	}

	// require_image with fetch_og_image: decided once the fetch is done.
	req := mustCompile(t, "f", func(c *config.Mapping) { c.FetchOGImage, c.RequireImage = ptr(true), ptr(true) })
	r = mapOne(t, req, noImage)
	if !r.NeedsOGImage || r.Payload == nil {
		t.Fatalf("want a pending payload, got %+v", r)
	}
	r.ResolveOGImage("")
	if r.Payload != nil || !strings.HasPrefix(r.Skip, "no image") {
		t.Errorf("no og:image with require_image: got %+v", r)
	}
	if r := mapOne(t, mustCompile(t, "f", nil), noImage); r.NeedsOGImage {
		t.Error("NeedsOGImage without fetch_og_image")
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", func(c *config.Mapping) {
		c.Type = "event"
		c.Event = &config.EventFields{
			Start: "g:start", City: "g:location/city", Country: "g:location@country", RegistrationURL: "g:register",
			TimeZone: "g:tz", TimeZoneID: ptr(int64(12)),
		}
	})
	tests := []struct {
		name, item string
		want       *Event
		skip       string
	}{
		{
			name: "ev namespace",
			item: `<item><title>a</title><link>https://example.org/a</link><ev:startdate>2024-05-01T18:00:00+02:00</ev:startdate><ev:enddate>2024-05-01T20:00:00+02:00</ev:enddate><ev:location>Town hall</ev:location><ev:type>talk</ev:type></item>`,
			want: &Event{Start: time.Date(2024, 5, 1, 16, 0, 0, 0, time.UTC), End: time.Date(2024, 5, 1, 18, 0, 0, 0, time.UTC), Location: "Town hall", TimeZoneID: ptr(int64(12))},
		},
		{
			name: "xCal basic format",
			item: `<item><title>a</title><link>https://example.org/a</link><xCal:dtstart>20061201T100000Z</xCal:dtstart><xCal:dtend>20061201T113000Z</xCal:dtend><xCal:location>Room 1</xCal:location></item>`,
			want: &Event{Start: time.Date(2006, 12, 1, 10, 0, 0, 0, time.UTC), End: time.Date(2006, 12, 1, 11, 30, 0, 0, time.UTC), Location: "Room 1", TimeZoneID: ptr(int64(12))},
		},
		{
			name: "date only is all day",
			item: `<item><title>a</title><link>https://example.org/a</link><ev:startdate>2024-05-01</ev:startdate></item>`,
			want: &Event{Start: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), AllDay: ptr(true), TimeZoneID: ptr(int64(12))},
		},
		{
			name: "configured paths, nested and attribute, zone for floating times",
			item: `<item><title>a</title><link>https://example.org/a</link><g:start>2024-07-01 09:30</g:start><g:tz>Europe/Paris</g:tz>
<g:location country="FR"><city>Paris</city></g:location><g:register>/signup</g:register></item>`,
			want: &Event{Start: time.Date(2024, 7, 1, 7, 30, 0, 0, time.UTC), City: "Paris", Country: "FR", RegistrationURL: "https://example.org/signup", TimeZoneID: ptr(int64(12))},
		},
		{
			name: "an end before the start is dropped",
			item: `<item><title>a</title><link>https://example.org/a</link><ev:startdate>2024-05-02</ev:startdate><ev:enddate>2024-05-01</ev:enddate></item>`,
			want: &Event{Start: time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC), AllDay: ptr(true), TimeZoneID: ptr(int64(12))},
		},
		{
			name: "no start: skipped",
			item: `<item><title>a</title><link>https://example.org/a</link><ev:location>x</ev:location></item>`,
			skip: "no event start: nothing at g:start, ev:startdate, xCal:dtstart",
		},
		{
			name: "unreadable start: skipped",
			item: `<item><title>a</title><link>https://example.org/a</link><ev:startdate>next Tuesday</ev:startdate></item>`,
			skip: `bad event start: "next Tuesday" at ev:startdate is not a date`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mapOne(t, m, tc.item)
			if tc.skip != "" {
				if r.Skip != tc.skip || r.Payload != nil {
					t.Errorf("got skip %q payload %v, want skip %q", r.Skip, r.Payload, tc.skip)
				}
				return
			}
			if diff := gocmp.Diff(tc.want, mustPayload(t, r).Event); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
	// ev:type is a source category, so category_map can use it.
	cm := mustCompile(t, "f", func(c *config.Mapping) {
		c.Type = "event"
		c.CategoryMap = map[string]string{"talk": "Talks"}
	})
	p := mustPayload(t, mapOne(t, cm, tests[0].item))
	if diff := gocmp.Diff([]string{"Talks"}, p.CategoryNames); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
}

func TestNeeds(t *testing.T) {
	t.Parallel()
	withDefault := mustCompile(t, "f", func(c *config.Mapping) {
		c.Type = "need"
		c.Need = &config.NeedFields{Quantity: "g:quantity", DefaultQuantity: ptr(1)}
	})
	strict := mustCompile(t, "f", func(c *config.Mapping) {
		c.Type = "need"
		c.Need = &config.NeedFields{Quantity: "g:quantity", ByDate: "g:by"}
	})
	byDays := mustCompile(t, "f", func(c *config.Mapping) {
		c.Type = "need"
		c.Need = &config.NeedFields{Quantity: "g:quantity", ByDate: "g:by", DefaultByDays: ptr(14)}
	})
	tests := []struct {
		name string
		m    *Mapping
		item string
		want *Need
		skip string
	}{
		{"quantity from the item", withDefault, `<item><title>a</title><g:quantity>1,200 volunteers</g:quantity></item>`, &Need{Quantity: ptr(1200)}, ""},
		{"default quantity", withDefault, `<item><title>a</title></item>`, &Need{Quantity: ptr(1)}, ""},
		{"bad quantity", withDefault, `<item><title>a</title><g:quantity>many</g:quantity></item>`, nil, `bad need quantity: "many" at g:quantity is not a number`},
		{"quantity and by-date", strict, `<item><title>a</title><g:quantity>3</g:quantity><g:by>2024-06-30</g:by></item>`, &Need{Quantity: ptr(3), ByDate: time.Date(2024, 6, 30, 0, 0, 0, 0, time.UTC)}, ""},
		{"missing quantity", strict, `<item><title>a</title><g:by>2024-06-30</g:by></item>`, nil, "no need quantity: nothing at g:quantity and no default_quantity"},
		// The API does not require a by-date: the Need is published without one.
		{"missing by-date", strict, `<item><title>a</title><g:quantity>3</g:quantity></item>`, &Need{Quantity: ptr(3)}, ""},
		{"missing by-date, default days", byDays, `<item><title>a</title><pubDate>Mon, 03 Jun 2024 10:00:00 GMT</pubDate><g:quantity>3</g:quantity></item>`, &Need{Quantity: ptr(3), ByDate: time.Date(2024, 6, 17, 10, 0, 0, 0, time.UTC)}, ""},
		{"by-date wins over default days", byDays, `<item><title>a</title><pubDate>Mon, 03 Jun 2024 10:00:00 GMT</pubDate><g:quantity>3</g:quantity><g:by>2024-06-30</g:by></item>`, &Need{Quantity: ptr(3), ByDate: time.Date(2024, 6, 30, 0, 0, 0, 0, time.UTC)}, ""},
		{"bad by-date", strict, `<item><title>a</title><g:quantity>3</g:quantity><g:by>soon</g:by></item>`, nil, `bad need by-date: "soon" at g:by is not a date`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mapOne(t, tc.m, tc.item)
			if tc.skip != "" {
				if r.Skip != tc.skip {
					t.Errorf("skip: got %q, want %q", r.Skip, tc.skip)
				}
				return
			}
			if diff := gocmp.Diff(tc.want, mustPayload(t, r).Need); diff != "" {
				t.Errorf("need (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExternalIDs(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "feed-a", nil)
	item := `<item><title>a</title><link>https://example.org/a</link><guid isPermaLink="false">tag:1</guid><description>one</description></item>`
	id := mustPayload(t, mapOne(t, m, item)).ExternalID
	if id != externalID("feed-a", "guid:tag:1") || len(id) != 24 {
		t.Errorf("id %q", id)
	}
	// Stable across content edits and mapping edits other than the feed id.
	edited := strings.Replace(strings.Replace(item, "one", "two", 1), "<title>a", "<title>b", 1)
	other := mustCompile(t, "feed-a", func(c *config.Mapping) {
		c.Type, c.TitleMax, c.Categories = "link", ptr(5), []string{"x"}
	})
	if got := mustPayload(t, mapOne(t, other, edited)).ExternalID; got != id {
		t.Errorf("id moved with content or mapping: %q then %q", id, got)
	}
	if got := mustPayload(t, mapOne(t, mustCompile(t, "feed-b", nil), item)).ExternalID; got == id {
		t.Error("ids of two feeds collide")
	}

	// Fallbacks: canonical link, then title and date.
	noGUID := `<item><title>a</title><link>https://EXAMPLE.org:443/a?utm_source=x#frag</link></item>`
	if got, want := mustPayload(t, mapOne(t, m, noGUID)).ExternalID, externalID("feed-a", "link:https://example.org/a#frag"); got != want {
		t.Errorf("link-based id: got %s, want %s", got, want)
	}
	bare := `<item><title>a</title><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>`
	if got, want := mustPayload(t, mapOne(t, m, bare)).ExternalID, externalID("feed-a", "title:a\x002003-06-10T04:00:00Z"); got != want {
		t.Errorf("title-based id: got %s, want %s", got, want)
	}
}

func TestGUIDReuseAndDuplicates(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	feed := parseFeed(t, rss(`
<item><title>a</title><link>https://example.org/a</link><guid>same</guid></item>
<item><title>b</title><link>https://example.org/b</link><guid>same</guid></item>
<item><title>c</title><link>https://example.org/c</link><guid>unique</guid></item>
<item><title>c again</title><link>https://example.org/c</link><guid>other</guid></item>
<item><title>d</title><link>https://example.org/d</link><guid>d</guid></item>
<item><title>d</title><link>https://example.org/d</link><guid>d2</guid></item>`))
	rs := m.Map(feed, testNow)
	if rs[0].Warning == "" || !strings.Contains(rs[0].Warning, `GUID "same"`) {
		t.Fatalf("warning: %q", rs[0].Warning)
	}
	for i, r := range rs {
		if r.Warning != rs[0].Warning {
			t.Errorf("item %d: warning %q, want it on every result", i, r.Warning)
		}
	}
	ids := func(i int) string { return mustPayload(t, rs[i]).ExternalID }
	if ids(0) != externalID("f", "link:https://example.org/a") || ids(1) != externalID("f", "link:https://example.org/b") {
		t.Errorf("GUID reuse: items should fall back to link keys")
	}
	// Items 2 and 3 share a link: the link does not identify them, so they
	// use title and date. Items 4 and 5 share link and title: duplicates.
	if ids(2) != externalID("f", "title:c\x00") || ids(3) != externalID("f", "title:c again\x00") {
		t.Errorf("shared link: want title keys, got %s %s", ids(2), ids(3))
	}
	if rs[4].Payload == nil || rs[5].Payload != nil || !strings.HasPrefix(rs[5].Skip, "duplicate: ") {
		t.Errorf("duplicate: got %+v / %+v", rs[4], rs[5])
	}
}

func TestHashStability(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	doc := rss(`<item><title>a</title><link>https://example.org/a</link><description>x</description></item>`)
	h1 := mustPayload(t, m.Map(parseFeed(t, doc), testNow)[0]).Hash
	h2 := mustPayload(t, m.Map(parseFeed(t, doc), testNow.AddDate(3, 0, 0))[0]).Hash
	if h1 != h2 || len(h1) != 64 {
		t.Errorf("hash changed with the clock or is malformed: %s %s", h1, h2)
	}
	changed := strings.Replace(doc, "<description>x", "<description>y", 1)
	if h3 := mustPayload(t, m.Map(parseFeed(t, changed), testNow)[0]).Hash; h3 == h1 {
		t.Error("hash did not change with the content")
	}
}

func TestMapEdgeCases(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	if rs := m.Map(nil, testNow); rs != nil {
		t.Errorf("nil feed: %v", rs)
	}
	rs := m.Map(&gofeed.Feed{Items: []*gofeed.Item{nil, {Title: "x"}}}, testNow)
	if len(rs) != 2 || rs[0].Skip == "" || rs[1].Payload == nil {
		t.Errorf("nil item: %+v", rs)
	}
	link := mustCompile(t, "f", func(c *config.Mapping) { c.Type = "link" })
	if r := mapOne(t, link, `<item><title>no link</title></item>`); !strings.HasPrefix(r.Skip, "no link") {
		t.Errorf("link without link: %+v", r)
	}
	// FeedBurner's original link wins over its redirector.
	p := mustPayload(t, mapOne(t, m, `<item><title>a</title><link>http://feeds.feedburner.com/~r/x/~3/abc/</link><feedburner:origLink>https://blog.example/post?utm_medium=feed</feedburner:origLink></item>`))
	if p.ExternalURL != "https://blog.example/post" {
		t.Errorf("origLink: %q", p.ExternalURL)
	}
}

// TestMapConcurrent maps one parsed feed from several goroutines with one
// Mapping (run with -race): both are shared read-only.
func TestMapConcurrent(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", func(c *config.Mapping) {
		c.CategoryRules = []config.CategoryRule{{When: `has_category("Startups")`, Categories: []string{"S"}}}
	})
	feed := loadTestFeed(t, "testdata/bench/feedjira__TechCrunch.xml")
	want := m.Map(feed, testNow)
	done := make(chan []Result)
	for range 4 {
		go func() { done <- m.Map(feed, testNow) }()
	}
	for range 4 {
		got := <-done
		for i := range want {
			if want[i].Payload == nil || got[i].Payload == nil || want[i].Payload.Hash != got[i].Payload.Hash {
				t.Fatalf("item %d differs between concurrent runs", i)
			}
		}
	}
}
