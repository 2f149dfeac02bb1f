package transform

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

var simpleCases = []struct {
	src    string
	simple bool
}{
	{`<p>a <a href="https://x.example/1" title="t" class="c">b</a> c.</p><p><img src="/i.png" width="640" alt="x"></p>`, true},
	{`plain text &amp; more`, true},
	{`<div><p>a</p>` + "\n" + `<ul><li>1</li><li>2 <b>bold <i>it</i></b></li></ul></div>`, true},
	{`<pre>` + "\n" + `code</pre><pre><!-- c -->` + "\n" + `x</pre><pre>` + "\n\n" + `y</pre>`, true},
	{`<h1>t</h1><h2>u</h2><dl><dt>a</dt><dd>b</dd></dl><hr><br/><div/>open`, true},
	{`<p>unclosed <em>at the end`, true},
	{`a<!--c-->b<span>c</span>d`, true},
	{`<a title="z" href="y" Title="dup" id="a">x</a><font color=red size=2>f</font>`, true},
	{`<p>a<div>b</div></p>`, false},
	{`<p>a<p>b`, false},
	{`<li>a<li>b`, false},
	{`<h1>a<h2>b</h2></h1>`, false},
	{`<a href=1>a<a href=2>b</a></a>`, false},
	{`<b>a<i>b</b>c</i>`, false},
	{`<b><b>x</b></b>`, false},
	{`</p>`, false},
	{`x</span>`, false},
	{`<table><tr><td>x</td></tr></table>`, false},
	{`<script>x</script>`, false},
	{`<svg><b>x</b></svg>`, false},
	{`<custom-el>x</custom-el>`, false},
	{`<!DOCTYPE html><p>x`, false},
	{"a\x00b", false},
	{`<image src=x>`, false},
	{`<p>a</br>b</p>`, false},
	{strings.Repeat("<span>", maxSimpleDepth+1), false},
}

func TestParseSimple(t *testing.T) {
	sc := &scratch{} // shared, as a span's items share it
	for _, c := range simpleCases {
		if got := checkParseSimple(t, sc, c.src); got != c.simple {
			t.Errorf("parseSimple(%q) = %v, want %v", c.src, got, c.simple)
		}
	}
}

// TestParseSimpleCorpus: on every body of the corpus that parseSimple
// takes, it builds the parser's tree; and it takes most of them.
func TestParseSimpleCorpus(t *testing.T) {
	sc := &scratch{}
	var bodies, simple int
	for _, feed := range corpusFeeds(t) {
		for _, it := range feed.Items {
			for _, src := range []string{it.Content, it.Description} {
				if src = strings.TrimSpace(src); src == "" {
					continue
				}
				bodies++
				if checkParseSimple(t, sc, src) {
					simple++
				}
			}
		}
	}
	t.Logf("%d bodies, %d built by parseSimple", bodies, simple)
}

func FuzzParseSimple(f *testing.F) {
	for _, c := range simpleCases {
		f.Add(c.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// Twice in one scratch: the second tree is built in the memory
		// of the first.
		sc := &scratch{}
		checkParseSimple(t, sc, src)
		checkParseSimple(t, sc, src)
	})
}

// checkParseSimple fails t when parseSimple takes src and builds another
// tree than html.ParseFragment; it reports whether parseSimple took it.
// The tree is built in sc, reset first, as Map resets it before each
// item.
func checkParseSimple(t *testing.T, sc *scratch, src string) bool {
	t.Helper()
	sc.reset()
	got := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	if !parseSimple(src, got, sc) {
		if got.FirstChild != nil {
			t.Errorf("parseSimple(%q) refused it but changed the parent", src)
		}
		return false
	}
	want := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(src), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		t.Fatalf("parseSimple took %q, which html.ParseFragment refuses: %v", src, err)
	}
	for _, n := range nodes {
		want.AppendChild(n)
	}
	if g, w := dumpTree(got), dumpTree(want); g != w {
		t.Errorf("parseSimple(%q):\n got %s\nwant %s", src, g, w)
	}
	return true
}

// dumpTree writes every field of every node that the tree's users read.
func dumpTree(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		fmt.Fprintf(&b, "\n%s%d %d %q %q %q", strings.Repeat(" ", depth), n.Type, n.DataAtom, n.Data, n.Namespace, n.Attr)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Parent != n || (c.NextSibling != nil && c.NextSibling.PrevSibling != c) {
				b.WriteString(" BROKEN LINKS")
			}
			walk(c, depth+1)
		}
		if n.FirstChild != nil && n.LastChild.NextSibling != nil {
			b.WriteString(" BROKEN LAST")
		}
	}
	walk(n, 0)
	return b.String()
}
