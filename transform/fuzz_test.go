package transform

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/config"
)

// FuzzMap parses arbitrary bytes as a feed and maps it with a plain and a
// rule-heavy mapping: no panic, one result per item, exactly one outcome
// each, inert bodies, hashes that match, and the same answer twice.
func FuzzMap(f *testing.F) {
	for _, s := range []string{
		rss(`<item><title>a &amp;amp; b</title><link>/x?utm_source=1#f</link><guid>g</guid><description>&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</description></item>`),
		rss(`<item><title>e</title><category>Events</category><ev:startdate>20240101T100000Z</ev:startdate><ev:enddate>2024-01-01</ev:enddate><xCal:location>x</xCal:location></item>`),
		rss(`<item><guid>same</guid><title>a</title></item><item><guid>same</guid><title>b</title><media:content url="/a.jpg" width="9999999999999999999" height="-1"/></item>`),
		`<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://a/b/"><entry><id>1</id><title type="html">&lt;b&gt;t&lt;/b&gt;</title><content type="xhtml" xml:base="c/"><div xmlns="http://www.w3.org/1999/xhtml"><svg><script>x</script></svg><a href="javascript:x">y</a></div></content></entry></feed>`,
		`{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[{"id":"1","content_html":"<base href=javascript:/><a href=x>x</a>","image":"//cdn/x.png","tags":["A","a"]}]}`,
	} {
		f.Add([]byte(s))
	}
	for _, dir := range []string{"feeds", "bench"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.*"))
		for _, file := range files {
			// Small seeds only: the fuzzer minimizes every new input it
			// finds, and minimizing a 100 KB feed takes the whole run.
			if data, err := os.ReadFile(file); err == nil && filepath.Ext(file) != ".tsv" && len(data) < 16<<10 {
				f.Add(data)
			}
		}
	}
	plain := mustCompile(f, "fuzz", nil)
	rules := mustCompile(f, "fuzz", func(c *config.Mapping) {
		week := config.Duration(7 * 24 * time.Hour)
		c.TypeRules = []config.TypeRule{
			{When: `has_category("events")`, Type: "event"},
			{When: `ext("g:quantity") != ""`, Type: "need"},
			{When: `link contains "/l/"`, Type: "link"},
		}
		c.CategoryRules = []config.CategoryRule{{When: `len(title) > 10`, Categories: []string{"Long"}}}
		c.CategoryMap = map[string]string{"a": "A"}
		c.PassUnmappedCategories = ptr(true)
		c.Exclude = &config.Filter{Keywords: []string{"zzz"}, Patterns: []string{`(?i)sponsored`}}
		c.MaxAge, c.ExpireAfter, c.PriorityFor = &week, &week, &week
		c.TitleMax, c.SummaryMax = ptr(20), ptr(40)
		c.FetchOGImage = ptr(true)
		c.Need = &config.NeedFields{Quantity: "g:quantity", ByDate: "g:by"}
		c.Event = &config.EventFields{Start: "g:start", TimeZone: "g:tz", AllDay: "g:allday"}
	})
	now := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		feed, err := gofeed.NewParser().Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, m := range []*Mapping{plain, rules} {
			first := m.Map(feed, now)
			if len(first) != len(feed.Items) {
				t.Fatalf("%d results for %d items", len(first), len(feed.Items))
			}
			again := m.Map(feed, now)
			for i, r := range first {
				checkResult(t, "fuzz", i, r)
				if (r.Payload == nil) != (again[i].Payload == nil) || r.Skip != again[i].Skip ||
					(r.Payload != nil && r.Payload.Hash != again[i].Payload.Hash) {
					t.Fatalf("item %d: mapping twice differs: %+v / %+v", i, r, again[i])
				}
			}
		}
	})
}
