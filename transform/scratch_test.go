package transform

import (
	"net/url"
	"strings"
	"testing"
)

// TestScratchCorpus: bodies built in a scratch shared by every item, as
// Map shares it within a span, give what bodies built on their own give:
// the tree, its text, its image picks and its sanitized HTML. An item's
// two bodies are built in the scratch one after the other and read after
// both are, as mapItem may; the scratch is reset between items, so every
// item but the first is built in memory an earlier one used.
func TestScratchCorpus(t *testing.T) {
	s := newBodySanitizer(newPolicy())
	sc := newScratch(s)
	var bodies int
	for name, feed := range corpusFeeds(t) {
		for i, it := range feed.Items {
			base, _ := url.Parse(it.Link)
			var srcs []string
			for _, src := range []string{it.Content, it.Description} {
				if strings.TrimSpace(src) != "" {
					srcs = append(srcs, src)
				}
			}
			sc.reset()
			shared := make([]*content, len(srcs))
			for k, src := range srcs {
				shared[k] = parseContentIn(sc, src, base)
			}
			for k, src := range srcs {
				bodies++
				got, want := shared[k], parseContent(src, base)
				if g, w := dumpTree(got.root), dumpTree(want.root); g != w {
					t.Fatalf("%s item %d body %d: tree in the shared scratch differs:\n got %s\nwant %s", name, i, k, g, w)
				}
				if got.text() != want.text() || got.image != want.image || got.firstSrc != want.firstSrc ||
					got.hasFirstSrc != want.hasFirstSrc || len(got.rejected) != len(want.rejected) {
					t.Errorf("%s item %d body %d: text, image or picks differ", name, i, k)
				}
				var g string
				sc.bodies.add(got, &g, nil)
				if w := s.sanitize(want); g != w {
					t.Errorf("%s item %d body %d: sanitized\n got %q\nwant %q", name, i, k, g, w)
				}
			}
		}
	}
	t.Logf("%d bodies", bodies)
}

// TestScratchAttrLists: adding an attribute to an element built in a
// scratch (setAttr appends) leaves the next element's list as it was.
func TestScratchAttrLists(t *testing.T) {
	sc := &scratch{}
	c := parseContentIn(sc, `<p><span title="a">x</span><span title="b" lang="en">y</span></p>`, nil)
	first := c.root.FirstChild.FirstChild
	second := first.NextSibling
	setAttr(first, "dir", "rtl")
	if got := attr(second, "title"); got != "b" || len(second.Attr) != 2 {
		t.Errorf("second element's attributes %q after setAttr on the first", second.Attr)
	}
	if got := attr(first, "dir"); got != "rtl" || attr(first, "title") != "a" {
		t.Errorf("first element's attributes %q", first.Attr)
	}
}
