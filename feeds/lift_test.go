package feeds

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/internal/feedfarm"
)

// gofeedParse parses doc as parse does, without lifting texts.
func gofeedParse(doc []byte) (*gofeed.Feed, error) {
	return newParser().Parse(bytes.NewReader(doc))
}

// checkLiftText fails t if the feed parseLifted reads from doc differs
// from gofeed's reading of doc. parseLifted may decline (parse then reads
// the original), but it must not read a document that gofeed cannot. It
// reports whether parseLifted read doc.
func checkLiftText(t *testing.T, name string, doc []byte) bool {
	t.Helper()
	got := parseLifted(doc, newParser())
	if got == nil {
		return false
	}
	want, err := gofeedParse(doc)
	if err != nil {
		t.Errorf("%s: read with texts lifted, but gofeed cannot read the original: %v", name, err)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		alt, _ := liftText(doc)
		t.Errorf("%s: the feed read with texts lifted differs from gofeed's\nlifted: %s", name, alt)
	}
	return true
}

func TestLiftText(t *testing.T) {
	t.Parallel()
	// P stands for a text long enough to be lifted (liftMin).
	long := strings.Repeat("word ", 14)
	const head = `<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:x="urn:x" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>t</title><item><title>i</title>`
	const tail = `</item></channel></rss>`
	for _, tc := range []struct {
		name, item string
		lifted     bool
	}{
		{"escaped html", `<description> &lt;p&gt;a &amp;amp; bP&lt;/p&gt; </description>`, true},
		{"character references", `<description>&lt;a href=&#34;x&#34;&gt;&#x2019;&#8217;&#39;P&lt;/a&gt;</description>`, true},
		{"content:encoded", `<content:encoded>&lt;p&gt;xP&lt;/p&gt;</content:encoded>`, true},
		{"a section", "<content:encoded>\n <![CDATA[<p>x&amp;\r\nP</p>]]>\t</content:encoded>", true},
		{"plain text", `<description>P</description>`, true},
		{"channel's", `</item><description>&lt;b&gt;P</description><item>`, true},
		{"attributes around", `</item><item a="1"><description>&lt;b&gt;P</description>`, true},
		{"short", `<description>&lt;b&gt;</description>`, false},
		{"inside another element", `<x:wrap><description>&lt;b&gt;xP&lt;/b&gt;</description></x:wrap>`, false},
		{"html entity", `<description>&lt;p&gt;a&nbsp;bP</description>`, false},
		{"windows-1252 reference", `<description>&lt;p&gt;&#150;P</description>`, false},
		{"carriage return reference", `<description>&lt;p&gt;&#13;P</description>`, false},
		{"control reference", `<description>&lt;p&gt;&#1;P</description>`, false},
		{"upper-case hex", `<description>&lt;p&gt;&#X41;P</description>`, false},
		{"bare ampersand", `<description>&lt;p&gt; a & bP</description>`, false},
		{"decodes to a section end", `<description>&lt;p&gt;]]&gt;P</description>`, true},
		{"section end as it is", `<description>&lt;p&gt;]]>P</description>`, false},
		{"attribute", `<description type="html">&lt;p&gt;P</description>`, false},
		{"markup inside", `<description>&lt;p&gt;P<![CDATA[x]]></description>`, false},
		{"two sections", `<description><![CDATA[P]]><![CDATA[x]]></description>`, false},
		{"empty section", `<description><![CDATA[]]></description><dc:description>P</dc:description>`, false},
		{"overwritten", `<description>P</description><description>x</description>`, false},
		{"overwriting", `<description>x</description><description>P</description>`, true},
		{"inside a section", `<x:y><![CDATA[<description>&lt;p&gt;P</description>]]></x:y>`, false},
		{"holding a description", `<content:encoded><![CDATA[<description>&lt;p&gt;P</description>]]></content:encoded>`, true},
		{"inside a comment", `<!-- <description>&lt;p&gt;P</description> -->`, false},
		{"inside an attribute", `<x:a b='<description>&lt;p&gt;P</description>'/>`, false},
		// A later element decoding to a marker's exact text must not pass
		// for the marker restore looks for.
		{"marker by hex reference", `<description>P</description><description>&#xE000;0&#xE000;</description>`, false},
		{"marker by decimal reference", `<description>P</description><description>&#057344;0&#57344;</description>`, false},
		{"marker by lower-case hex", `<description>P</description><description>&#xe000;0&#xe000;</description>`, false},
	} {
		doc := []byte(head + strings.ReplaceAll(tc.item, "P", long) + tail)
		if got := checkLiftText(t, tc.name, doc); got != tc.lifted {
			t.Errorf("%s: lifted %v, want %v", tc.name, got, tc.lifted)
		}
	}
	for name, doc := range map[string]string{
		"DOCTYPE": `<!DOCTYPE rss><rss><channel><description>` + long + `</description></channel></rss>`,
		"Atom":    `<feed xmlns="http://www.w3.org/2005/Atom"><description>` + long + `</description></feed>`,
		"marker":  `<rss><channel><description>` + long + "\uE000</description></channel></rss>",
		"case":    `<rss><Channel><description>` + long + `</description></Channel></rss>`,
	} {
		if alt, _ := liftText([]byte(doc)); alt != nil {
			t.Errorf("%s: lifted %s", name, alt)
		}
	}
}

// TestLiftTextDocuments holds the rewrite to gofeed's reading of the
// original on every document at hand: the bench's farm, the test data of
// feeds and transform and the corpus, each normalized as parse does first.
func TestLiftTextDocuments(t *testing.T) {
	t.Parallel()
	docs := map[string][]byte{}
	farm := feedfarm.New(feedfarm.Options{Feeds: 2, Items: 20, Seed: 1})
	docs["farm 0"], docs["farm 1"] = farm.Bytes(0), farm.Bytes(1)
	for _, dir := range []string{"testdata", filepath.Join("..", "transform", "testdata", "bench"), filepath.Join(corpusDir(t), "feeds")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Logf("%s: %v", dir, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasSuffix(e.Name(), ".tsv") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			docs[filepath.Join(dir, e.Name())] = b
		}
	}
	rewritten, declined := 0, 0
	for name, body := range docs {
		doc, isJSON, _, err := normalize(body, "", defaultMaxBody())
		if err != nil || isJSON {
			continue
		}
		if checkLiftText(t, name, doc) {
			rewritten++
		} else if alt, _ := liftText(doc); alt != nil {
			// Lifted, then refused: parse reads such a document twice.
			declined++
			t.Logf("%s: lifted texts not where expected", name)
		}
	}
	if rewritten < 3 {
		t.Errorf("%d of %d documents read with texts lifted; the farm's alone are 2", rewritten, len(docs))
	}
	t.Logf("%d of %d documents read with texts lifted, %d lifted and refused", rewritten, len(docs), declined)
}

func FuzzLiftText(f *testing.F) {
	farm := feedfarm.New(feedfarm.Options{Feeds: 1, Items: 2, Seed: 1})
	f.Add(farm.Bytes(0))
	long := strings.Repeat("&lt;b&gt;&#34;x&#x27; ", 5)
	f.Add([]byte(`<rss><channel><description> ` + long + ` </description><item><content:encoded>&amp;lt;` + long + `</content:encoded></item></channel></rss>`))
	f.Add([]byte(`<rss a='>'><channel><x:y xmlns:x="urn:x"><description>` + long + `</description></x:y><!-- c --><?pi?><item><description><![CDATA[` + long + `]]></description></item><item/><item><description>` + long + `</description><description>x</description></item></channel></rss>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkLiftText(t, "fuzz", doc)
	})
}
