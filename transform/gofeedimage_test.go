package transform

import (
	"os"
	"path/filepath"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/mmcdole/gofeed"
	gofeedrss "github.com/mmcdole/gofeed/rss"

	"github.com/feedworker/feedworker/feeds"
)

// withGofeedScan returns a copy of feed (parsed by feeds.Parse, which turns
// gofeed's HTML image scan off) whose items carry the Image gofeed's RSS
// translator finds with the scan on: what Map saw before it made that pick
// from its own parse.
func withGofeedScan(t *testing.T, feed *gofeed.Feed) *gofeed.Feed {
	t.Helper()
	orig, ok := feed.OriginalFeed().(*gofeedrss.Feed)
	if !ok {
		t.Fatalf("RSS feed without its original (feeds.Parse keeps it): %T", feed.OriginalFeed())
	}
	scanned, err := (&gofeed.DefaultRSSTranslator{}).Translate(orig)
	if err != nil {
		t.Fatalf("translate: %v", err)
	}
	if len(scanned.Items) != len(feed.Items) {
		t.Fatalf("translate: %d items, feeds.Parse %d", len(scanned.Items), len(feed.Items))
	}
	out := *feed
	out.Items = make([]*gofeed.Item, len(feed.Items))
	for i, it := range feed.Items {
		c := *it
		c.Image = scanned.Items[i].Image
		out.Items[i] = &c
	}
	return &out
}

// mapEqual maps both feeds and fails on any difference in the results.
func mapEqual(t *testing.T, name string, m *Mapping, got, want *gofeed.Feed) (images int) {
	t.Helper()
	g, w := m.Map(got, goldenNow), m.Map(want, goldenNow)
	for i := range w {
		if w[i].Payload != nil && w[i].Payload.ImageURL != "" {
			images++
		}
	}
	view := func(rs []Result) []goldenResult {
		out := make([]goldenResult, len(rs))
		for i, r := range rs {
			out[i] = goldenResult{Skip: r.Skip, NeedsOGImage: r.NeedsOGImage, Warning: r.Warning, Payload: r.Payload}
			if r.Err != nil {
				out[i].Err = r.Err.Error()
			}
		}
		return out
	}
	if diff := gocmp.Diff(view(w), view(g)); diff != "" {
		t.Errorf("%s: mapping without gofeed's scan differs from with it (-with +without):\n%s", name, diff)
	}
	return images
}

// TestGofeedImagePickCorpus checks, on every RSS feed of the corpus, that
// the items map exactly as they did when gofeed parsed each item's HTML
// for Item.Image itself.
func TestGofeedImagePickCorpus(t *testing.T) {
	dir := corpusDir(t)
	m := mustCompile(t, "corpus", nil)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rssFeeds, items, images int
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		feed, err := feeds.Parse(data, "")
		if err != nil || feed.FeedType != "rss" {
			continue
		}
		rssFeeds++
		items += len(feed.Items)
		images += mapEqual(t, e.Name(), m, feed, withGofeedScan(t, feed))
	}
	t.Logf("%d RSS feeds, %d items, %d with an image", rssFeeds, items, images)
	if rssFeeds < 50 || images < 100 {
		t.Errorf("only %d RSS feeds and %d images compared: is the corpus complete?", rssFeeds, images)
	}
}

// TestGofeedImagePickCases covers the cases where gofeed's pick and the
// body's own first image differ.
func TestGofeedImagePickCases(t *testing.T) {
	m := mustCompile(t, "cases", nil)
	items := map[string]string{
		// gofeed takes the first <img> with a src, even one the DOM steps
		// remove with its ad block.
		"pruned": `<content:encoded><![CDATA[<p>Text</p><div class="feedflare"><img src="https://ads.example.org/flare.png"></div><img src="/b.jpg">]]></content:encoded>`,
		// An empty src in the content ends gofeed's search there.
		"empty src": `<content:encoded><![CDATA[<p>Text <img src=""></p>]]></content:encoded><description><![CDATA[<img src="https://example.org/d.jpg">]]></description>`,
		// No image in the content: the description's first one.
		"description": `<content:encoded><![CDATA[<p>Only text</p>]]></content:encoded><description><![CDATA[<p>x</p><img src="rel/d.jpg" width="10">]]></description>`,
		// Plain-text content, image in the description.
		"text content": `<content:encoded>Just words</content:encoded><description><![CDATA[<img data-src="https://example.org/lazy.jpg" src="https://example.org/e.jpg">]]></description>`,
		// The description is the body.
		"no content": `<description><![CDATA[<figure><img alt="x" src="https://example.org/f.jpg"></figure>]]></description>`,
		// A tracking pixel first: gofeed picks it, the mapping refuses it.
		"pixel": `<description><![CDATA[<img src="https://example.org/p.gif" width="1" height="1"><img src="https://example.org/g.jpg">]]></description>`,
		// An explicit image wins over the HTML.
		"enclosure": `<enclosure url="https://example.org/h.jpg" type="image/jpeg" length="1"/><description><![CDATA[<img src="https://example.org/i.jpg">]]></description>`,
		// Media description only: gofeed scans nothing.
		"media": `<media:group><media:description>&lt;img src="https://example.org/j.jpg"&gt;</media:description></media:group>`,
	}
	for name, body := range items {
		doc := `<?xml version="1.0"?><rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>T</title><link>https://example.org/</link>` +
			`<item><title>Item</title><link>https://example.org/a/1</link><guid>1</guid>` + body + `</item></channel></rss>`
		feed, err := feeds.Parse([]byte(doc), "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if feed.Items[0].Image != nil && name != "enclosure" {
			t.Errorf("%s: feeds.Parse set Item.Image %q: gofeed's scan is on", name, feed.Items[0].Image.URL)
		}
		mapEqual(t, name, m, feed, withGofeedScan(t, feed))
	}
}
