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

// gofeedParse parses doc as parse does, without the CDATA rewrite.
func gofeedParse(doc []byte) (*gofeed.Feed, error) {
	p := gofeed.NewParser()
	p.KeepOriginalFeed = true
	p.RSSTranslator = &gofeed.DefaultRSSTranslator{DisableContentImageScan: true}
	return p.Parse(bytes.NewReader(doc))
}

// checkCDATAText fails t if gofeed reads the rewritten document
// differently from doc. A rewritten document that fails to parse is
// allowed (parse then reads the original), one that parses when the
// original does not is not. It reports whether doc was rewritten.
func checkCDATAText(t *testing.T, name string, doc []byte) bool {
	t.Helper()
	alt := cdataText(doc)
	if alt == nil {
		return false
	}
	got, err := gofeedParse(alt)
	if err != nil {
		return true
	}
	want, werr := gofeedParse(doc)
	if werr != nil {
		t.Errorf("%s: the rewritten document parses, the original does not: %v", name, werr)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: gofeed reads the rewritten document differently\nrewritten: %s", name, alt)
	}
	return true
}

func TestCDATAText(t *testing.T) {
	t.Parallel()
	const head = `<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:x="urn:x"><channel><title>t</title><item><title>i</title>`
	const tail = `</item></channel></rss>`
	for _, tc := range []struct {
		name, item string
		rewrite    bool
	}{
		{"escaped html", `<description> &lt;p&gt;a &amp;amp; b&lt;/p&gt; </description>`, true},
		{"character references", `<description>&lt;a href=&#34;x&#34;&gt;&#x2019;&#8217;&#39;&lt;/a&gt;</description>`, true},
		{"content:encoded", `<content:encoded>&lt;p&gt;x&lt;/p&gt;</content:encoded>`, true},
		{"inside another element", `<x:wrap><description>&lt;b&gt;x&lt;/b&gt;</description></x:wrap>`, false},
		{"attributes around", `</item><item a="1"><description>&lt;b&gt;</description>`, true},
		{"html entity", `<description>&lt;p&gt;a&nbsp;b</description>`, false},
		{"windows-1252 reference", `<description>&lt;p&gt;&#150;</description>`, false},
		{"carriage return reference", `<description>&lt;p&gt;&#13;</description>`, false},
		{"control reference", `<description>&lt;p&gt;&#1;</description>`, false},
		{"upper-case hex", `<description>&lt;p&gt;&#X41;</description>`, false},
		{"bare ampersand", `<description>&lt;p&gt; a & b</description>`, false},
		{"decodes to a section end", `<description>&lt;p&gt;]]&gt;</description>`, false},
		{"section end as it is", `<description>&lt;p&gt;]]></description>`, false},
		{"attribute", `<description type="html">&lt;p&gt;</description>`, false},
		{"markup inside", `<description>&lt;p&gt;<![CDATA[x]]></description>`, false},
		{"no reference", `<description>plain</description>`, false},
		{"inside a section", `<content:encoded><![CDATA[<description>&lt;p&gt;</description>]]></content:encoded>`, false},
		{"inside a comment", `<!-- <description>&lt;p&gt;</description> -->`, false},
		{"inside an attribute", `<x:a b='<description>&lt;p&gt;</description>'/>`, false},
	} {
		doc := []byte(head + tc.item + tail)
		if got := checkCDATAText(t, tc.name, doc); got != tc.rewrite {
			t.Errorf("%s: rewritten %v, want %v", tc.name, got, tc.rewrite)
		}
	}
	if cdataText([]byte(`<!DOCTYPE rss><rss><channel><description>&lt;p&gt;</description></channel></rss>`)) != nil {
		t.Error("a document with a DOCTYPE was rewritten")
	}
	if cdataText([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><description>&lt;p&gt;</description></feed>`)) != nil {
		t.Error("an Atom document was rewritten")
	}
}

// TestCDATATextDocuments holds the rewrite to gofeed's reading of the
// original on every document at hand: the bench's farm, the test data of
// feeds and transform and the corpus, each normalized as parse does first.
func TestCDATATextDocuments(t *testing.T) {
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
	rewritten := 0
	for name, body := range docs {
		doc, isJSON, _, err := normalize(body, "", defaultMaxBody())
		if err != nil || isJSON {
			continue
		}
		if checkCDATAText(t, name, doc) {
			rewritten++
		}
	}
	if rewritten < 3 {
		t.Errorf("%d of %d documents rewritten; the farm's alone are 2", rewritten, len(docs))
	}
	t.Logf("%d of %d documents rewritten", rewritten, len(docs))
}

func FuzzCDATAText(f *testing.F) {
	farm := feedfarm.New(feedfarm.Options{Feeds: 1, Items: 2, Seed: 1})
	f.Add(farm.Bytes(0))
	f.Add([]byte(`<rss><channel><description> &lt;b&gt;&#34;x&#x27; </description><item><content:encoded>&amp;lt;</content:encoded></item></channel></rss>`))
	f.Add([]byte(`<rss a='>'><channel><x:y xmlns:x="urn:x"><description>&lt;b&gt;</description></x:y><!-- c --><?pi?></channel></rss>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCDATAText(t, "fuzz", doc)
	})
}
