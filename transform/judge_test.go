package transform

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// bluemondayVerdict is what bluemonday writes for one start tag alone.
func bluemondayVerdict(s *bodySanitizer, name string, attrs []html.Attribute) string {
	return s.policy.Sanitize(tagString(name, attrs, isVoid(name)))
}

func judgeVerdict(s *bodySanitizer, name string, attrs []html.Attribute) string {
	out, _ := s.judge.appendVerdict(nil, name, attrs, isVoid(name), nil)
	return string(out)
}

// TestTagJudge checks the judge against bluemonday on hand-written tags,
// each the hard case of one rule: URLs that do not parse, are relative,
// have another scheme, white space, or are rewritten by net/url; links to
// other hosts and not; patterns that match and do not; attributes the
// policy does not know; tags left with no attribute.
func TestTagJudge(t *testing.T) {
	t.Parallel()
	s := newBodySanitizer(newPolicy())
	a := func(kv ...string) []html.Attribute {
		var out []html.Attribute
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, html.Attribute{Key: kv[i], Val: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		attrs []html.Attribute
	}{
		{"a", a("href", "https://example.org/x?a=1&b=2#f")},
		{"a", a("href", "/relative")},
		{"a", a("href", "//example.org/protocol-relative")},
		{"a", a("href", "mailto:someone@example.org", "title", "mail")},
		{"a", a("href", "javascript:alert(1)", "title", "t")},
		{"a", a("href", "JavaScript:alert(1)")},
		{"a", a("href", "HTTPS://Example.org/Upper")},
		{"a", a("href", "  https://example.org/trimmed \u00a0")},
		{"a", a("href", "https://example.org/a b")},
		{"a", a("href", "https://example.org/tab\there")},
		{"a", a("href", "https://example.org/nl\nhere")},
		{"a", a("href", "https://example.org/cr\rhere")},
		{"a", a("href", "https://example.org/ctl\x01")},
		{"a", a("href", "https://example.org/ünïcode/パス?q=é")},
		{"a", a("href", "https://example.org/%zz")},
		{"a", a("href", "https://[::1]:80/")},
		{"a", a("href", "https://user:pass@example.org/")},
		{"a", a("href", "http://")},
		{"a", a("href", "http:opaque")},
		{"a", a("href", "https:///no-host")},
		{"a", a("href", "")},
		{"a", a("href", "https://example.org/1", "href", "/2")},
		{"a", a("href", "/1", "href", "https://example.org/2")},
		{"img", a("alt", "1", "src", "https://example.org/i.png", "alt", "2")},
		{"a", a("title", "only a title")},
		{"a", a("rel", "opener", "target", "_self", "href", "https://example.org/")},
		{"a", a("class", "x", "style", "color:red", "onclick", "x()")},
		{"a", a("href", "https://example.org/", "lang", "en-GB", "dir", "RTL", "title", `"q" & <b>`)},
		{"img", a("src", "https://example.org/i.png", "width", "640", "height", "360", "alt", "a")},
		{"img", a("src", "https://example.org/i.png", "width", "10%", "height", "123456", "style", "width:1px")},
		{"img", a("src", "https://example.org/i.png", "width", "00100", "height", " 1")},
		{"img", a("src", "/relative.png", "alt", "kept without src")},
		{"img", a("src", "data:image/png;base64,AAAA")},
		{"img", a("src", "data:image/png;base64,AA AA")},
		{"img", a("srcset", "https://example.org/1.png 1x", "data-src", "https://example.org/2.png")},
		{"img", a("title", "t")},
		{"td", a("colspan", "2", "rowspan", "x")},
		{"th", a("colspan", "")},
		{"ol", a("start", "3", "type", "i")},
		{"ul", a("start", "3")},
		{"blockquote", a("cite", "https://example.org/q")},
		{"blockquote", a("cite", "/relative")},
		{"q", a("cite", "mailto:x@example.org")},
		{"del", a("cite", "https://example.org/why", "datetime", "2024-01-01T10:00Z")},
		{"ins", a("datetime", "bad!")},
		{"time", a("datetime", "2024-01-01 10:00:00+01:00")},
		{"time", a("datetime", "123")},
		{"abbr", a("title", "HyperText")},
		{"dfn", a("title", "t", "id", "x")},
		{"span", a("title", "not on span")},
		{"p", a("lang", "x")},
		{"p", a("lang", "zh-Hant-TW", "dir", "auto")},
		{"div", a("dir", "sideways")},
		{"br", a("class", "x")},
		{"hr", a("lang", "en")},
		{"pre", a("lang", "en")},
	} {
		if got, want := judgeVerdict(s, tc.name, tc.attrs), bluemondayVerdict(s, tc.name, tc.attrs); got != want {
			t.Errorf("<%s %v>\n got %q\nwant %q", tc.name, tc.attrs, got, want)
		}
	}
}

// TestTagJudgeCorpus checks the judge against bluemonday on every allowed
// tag with attributes in the corpus's bodies, as the DOM steps leave them
// and as parsed, before the pruning drops attributes.
func TestTagJudgeCorpus(t *testing.T) {
	s := newBodySanitizer(newPolicy())
	var tags, differ int
	judge := func(n *html.Node) {
		if n.Type != html.ElementNode || !s.allowed[n.Data] || len(n.Attr) == 0 {
			return
		}
		for _, a := range n.Attr {
			if a.Namespace != "" || !plainName(a.Key) || strings.IndexByte(a.Val, 0) >= 0 {
				return // such a tree goes through bluemonday whole
			}
		}
		tags++
		if got, want := judgeVerdict(s, n.Data, n.Attr), bluemondayVerdict(s, n.Data, n.Attr); got != want {
			if differ++; differ <= 20 {
				t.Errorf("<%s %v>\n got %q\nwant %q", n.Data, n.Attr, got, want)
			}
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		judge(n)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, feed := range corpusFeeds(t) {
		for _, it := range feed.Items {
			for _, src := range []string{it.Content, it.Description} {
				if strings.TrimSpace(src) == "" {
					continue
				}
				nodes, err := html.ParseFragment(strings.NewReader(src), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range nodes {
					walk(n)
				}
				walk(parseContent(src, nil).root)
			}
		}
	}
	t.Logf("%d tags, %d differ", tags, differ)
	if tags < 10000 {
		t.Errorf("%d tags judged; want at least 10,000", tags)
	}
}

// FuzzTagJudge compares the judge with bluemonday on arbitrary values of
// the attributes the policy has rules for, on the elements it allows.
func FuzzTagJudge(f *testing.F) {
	for _, tc := range []struct {
		el, keys uint8
		v1, v2   string
	}{
		{0, 0x01, "https://example.org/", ""},
		{1, 0x23, "https://example.org/i.png", "64"},
		{2, 0x45, "/x", "2024-01-01"},
		{3, 0x67, "en", "rtl"},
	} {
		f.Add(tc.el, tc.keys, tc.v1, tc.v2)
	}
	s := newBodySanitizer(newPolicy())
	names := append(attrElements(), bodyElements()...)
	keys := []string{"href", "src", "alt", "title", "width", "height", "colspan", "rowspan", "start", "cite",
		"datetime", "lang", "dir", "rel", "target", "class", "style"}
	f.Fuzz(func(t *testing.T, el, k uint8, v1, v2 string) {
		if strings.IndexByte(v1+v2, 0) >= 0 {
			return // such a tree goes through bluemonday whole
		}
		name := names[int(el)%len(names)]
		attrs := []html.Attribute{{Key: keys[int(k&0x0f)%len(keys)], Val: v1}, {Key: keys[int(k>>4)%len(keys)], Val: v2}}
		if got, want := judgeVerdict(s, name, attrs), bluemondayVerdict(s, name, attrs); got != want {
			t.Errorf("<%s %v>\n got %q\nwant %q", name, attrs, got, want)
		}
	})
}
