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

// TestTagJudge checks the judge against bluemonday on the hand-written
// tags of judgeProbes; newBodySanitizer checks the same at every start
// and, on a difference, leaves every tag to bluemonday (so this test is
// what says the judge is in use).
func TestTagJudge(t *testing.T) {
	t.Parallel()
	s := newBodySanitizer(newPolicy())
	if s.judge == nil {
		t.Fatalf("the judge is not in use: %s", s.judgeOff)
	}
	for _, tc := range judgeProbes() {
		if got, want := judgeVerdict(s, tc.name, tc.attrs), bluemondayVerdict(s, tc.name, tc.attrs); got != want {
			t.Errorf("<%s %v>\n got %q\nwant %q", tc.name, tc.attrs, got, want)
		}
	}
}

// TestTagJudgeOffForAnotherPolicy: a policy the judge does not model (here
// relative URLs allowed) is caught at the start, and every body then goes
// through bluemonday whole.
func TestTagJudgeOffForAnotherPolicy(t *testing.T) {
	t.Parallel()
	p := newPolicy()
	p.AllowRelativeURLs(true)
	s := newBodySanitizer(p)
	if s.judge != nil {
		t.Fatal("the judge is in use for a policy allowing relative URLs")
	}
	if !strings.Contains(s.judgeOff, "/relative") {
		t.Errorf("the reason names no probe with a relative URL: %s", s.judgeOff)
	}
	body := `<p><a href="/relative">x</a> <img src="/i.png" alt="a"></p>`
	c := parseContent(body, nil)
	if got, want := s.sanitize(c), strings.TrimSpace(p.Sanitize(c.render())); got != want {
		t.Errorf("sanitized %q, bluemonday %q", got, want)
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
