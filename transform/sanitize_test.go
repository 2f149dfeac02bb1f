package transform

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/feedworker/feedworker/feeds"
)

// bluemondayBody is the body as it was sanitized before the tree walk:
// the tree rendered, then bluemonday over the text.
func bluemondayBody(s *bodySanitizer, c *content) string {
	return strings.TrimSpace(s.policy.Sanitize(c.render()))
}

// TestTreeSanitizerCorpus checks, on every item of the feed corpus, that
// the tree walk gives bluemonday's output byte for byte, for the content
// and the description, and that it falls back for few of them.
func TestTreeSanitizerCorpus(t *testing.T) {
	s := newBodySanitizer(newPolicy())
	var bodies, walked, nonEmpty int
	for name, feed := range corpusFeeds(t) {
		for i, it := range feed.Items {
			base, _ := url.Parse(it.Link)
			for _, src := range []string{it.Content, it.Description} {
				if strings.TrimSpace(src) == "" {
					continue
				}
				bodies++
				c := parseContent(src, base)
				want := bluemondayBody(s, c)
				got, ok := s.sanitizeTree(c)
				if !ok {
					continue
				}
				walked++
				if want != "" {
					nonEmpty++
				}
				if got != want {
					t.Errorf("%s item %d: tree walk differs from bluemonday\n got %q\nwant %q", name, i, got, want)
				}
				if full := s.sanitize(c); full != want {
					t.Errorf("%s item %d: sanitize differs from bluemonday", name, i)
				}
			}
		}
	}
	t.Logf("%d bodies, %d by the tree walk (%d not empty), %d by bluemonday", bodies, walked, nonEmpty, bodies-walked)
	if bodies < 1000 || walked < bodies*95/100 {
		t.Errorf("the walk handled %d of %d bodies; want nearly all of at least 1,000", walked, bodies)
	}
}

// TestTreeSanitizerCases checks hand-written trees, each the hard case of
// one rule, against bluemonday, and which of them fall back.
func TestTreeSanitizerCases(t *testing.T) {
	t.Parallel()
	s := newBodySanitizer(newPolicy())
	base, _ := url.Parse("https://example.org/a/")
	for _, tc := range []struct {
		in       string
		fallback bool
	}{
		{in: `<p>a &amp; b &lt;c&gt; "d" 'e'` + "\r\n" + `</p>`},
		{in: `<a>dropped link <b>bold</b></a> after`},
		{in: `<span><a href="javascript:alert(1)">x</a></span>`},
		{in: `<a href="mailto:x@example.org" title="t">mail</a>`},
		{in: `<img src="/i.jpg" width="10%" height="20" alt="a &quot;b&quot;">`},
		{in: `<img src="x.png"><img alt="no src">`},
		{in: `<pre>` + "\n\nindented\n" + `</pre>`},
		{in: `<table><tr><td colspan="2" rowspan="x">c</td></tr></table>`},
		{in: `<ol start="3"><li lang="en-GB" dir="RTL">x</li></ol>`},
		{in: `<time datetime="2024-01-01T10:00Z">t</time><del cite="/why" datetime="bad!">d</del>`},
		{in: `<custom-el>kept text</custom-el><font color="red">f</font><wbr><area>`},
		{in: `<blockquote cite="javascript:x"><q cite="/q">q</q></blockquote>`},
		{in: `<div><div><a><a href="/x">nested</a></a></div></div>`},
		{in: `<ruby>漢<rt>kan</rt></ruby> <bdi>x</bdi> <u>u</u>`},
		{in: `text only & more`},
		{in: `<xmp><b>raw</b></xmp>`, fallback: true},
		{in: `<listing>` + "\n" + `x</listing>`, fallback: true},
		{in: `<plaintext><b>`, fallback: true},
	} {
		c := parseContent(tc.in, base)
		want := bluemondayBody(s, c)
		got, ok := s.sanitizeTree(c)
		if ok == tc.fallback {
			t.Errorf("%q: walked %v, want %v", tc.in, ok, !tc.fallback)
		}
		if ok && got != want {
			t.Errorf("%q\n got %q\nwant %q", tc.in, got, want)
		}
		if full := s.sanitize(c); full != want {
			t.Errorf("%q: sanitize\n got %q\nwant %q", tc.in, full, want)
		}
	}
}

// TestTreeSanitizerAllowList checks that the walk's list of allowed
// elements is the policy's: bluemonday keeps a tag (with a title, a link
// and an image source, so that a and img qualify) exactly for the elements
// the walk lets through. lang is allowed globally, so an element the policy
// knows keeps it even where it would drop the bare tag.
func TestTreeSanitizerAllowList(t *testing.T) {
	t.Parallel()
	s := newBodySanitizer(newPolicy())
	names := strings.Fields(`a abbr acronym address area article aside audio b base bdi bdo big blink blockquote body br
		button canvas caption center cite code col colgroup data datalist dd del details dfn dialog dir div dl dt em embed
		fieldset figcaption figure font footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe
		image img input ins kbd keygen label legend li link main map mark marquee menu menuitem meta meter nav nobr noembed
		noframes noscript object ol optgroup option output p param picture plaintext pre progress q rb rp rt rtc ruby s samp
		script search section select slot small source span strike strong style sub summary sup table tbody td template
		textarea tfoot th thead time title tr track tt u ul var video wbr xmp custom-el`)
	for _, name := range names {
		tag := tagString(name, []html.Attribute{{Key: "lang", Val: "en"}, {Key: "title", Val: "t"}, {Key: "href", Val: "https://example.org/"}, {Key: "src", Val: "https://example.org/i.png"}}, isVoid(name))
		kept := s.policy.Sanitize(tag) != ""
		if kept != s.allowed[name] {
			t.Errorf("<%s>: bluemonday keeps it %v, the walk allows it %v", name, kept, s.allowed[name])
		}
	}
}

// TestWriteTagIsTokenString: the tags the walk hands bluemonday are
// written as html.Token writes them, escapes included.
func TestWriteTagIsTokenString(t *testing.T) {
	t.Parallel()
	attrs := []html.Attribute{{Key: "title", Val: `a "q" & <b> 'c'` + "\t\u00a0\x00"}, {Key: "href", Val: "/x?a=1&b=2"}, {Key: "data-x", Val: ""}}
	for _, tc := range []struct {
		name  string
		attrs []html.Attribute
		void  bool
	}{{"p", nil, false}, {"br", nil, true}, {"a", attrs, false}, {"img", attrs, true}} {
		tok := html.Token{Type: html.StartTagToken, Data: tc.name, Attr: tc.attrs}
		if tc.void {
			tok.Type = html.SelfClosingTagToken
		}
		if got, want := tagString(tc.name, tc.attrs, tc.void), tok.String(); got != want {
			t.Errorf("tagString(%s) = %q, want %q", tc.name, got, want)
		}
	}
}

// TestEscapedIsEscapeString: the walk escapes text and attribute values
// as html.EscapeString does, every byte value among them.
func TestEscapedIsEscapeString(t *testing.T) {
	t.Parallel()
	var all []byte
	for c := range 256 {
		all = append(all, byte(c), 'x')
	}
	for _, s := range []string{"", "plain", "&", `a & b <c> "d" 'e'` + "\r\n", "&amp;&&", "\r", "é'ü\"", string(all)} {
		if got, want := string(appendEscaped([]byte("p"), s)), "p"+html.EscapeString(s); got != want {
			t.Errorf("appendEscaped(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzTreeSanitizer compares the tree walk with bluemonday on arbitrary
// fragments, after the DOM steps, wherever the walk does not fall back.
func FuzzTreeSanitizer(f *testing.F) {
	for _, s := range []string{
		`<p>a<a>b<a href="/x">c</a></a><img src=/i.png width=1 height=1><br></p>`,
		`<pre>` + "\n" + `x</pre><custom-el lang=en>y</custom-el><big>z</big>`,
		`<table><td colspan=2>x<svg><b>y</b></svg></table><xmp>r</xmp>`,
	} {
		f.Add(s)
	}
	s := newBodySanitizer(newPolicy())
	base, _ := url.Parse("https://example.org/a/")
	f.Fuzz(func(t *testing.T, in string) {
		c := parseContent(in, base)
		want := bluemondayBody(s, c)
		if got, ok := s.sanitizeTree(c); ok && got != want {
			t.Errorf("%q\n got %q\nwant %q", in, got, want)
		}
	})
}

// BenchmarkSanitize measures the body sanitizing of the bench feeds'
// items both ways, after the same parse and DOM steps: "bluemonday"
// renders the tree and sanitizes the text (as before the tree walk),
// "tree" is the walk.
func BenchmarkSanitize(b *testing.B) {
	s := newBodySanitizer(newPolicy())
	var contents []*content
	for _, data := range benchFiles(b) {
		feed, err := feeds.Parse(data, "")
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range feed.Items {
			base, _ := url.Parse(it.Link)
			src := it.Content
			if src == "" {
				src = it.Description
			}
			contents = append(contents, parseContent(src, base))
		}
	}
	for _, way := range []struct {
		name string
		run  func(*content) string
	}{
		{"bluemonday", func(c *content) string { return bluemondayBody(s, c) }},
		{"tree", s.sanitize},
	} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, c := range contents {
					way.run(c)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(contents)), "ns/item")
		})
	}
}

// TestSanitizeBatchCorpus sanitizes each corpus feed's bodies in one batch
// (as Map does: buffers shared between the bodies) and checks each against
// bluemonday alone.
func TestSanitizeBatchCorpus(t *testing.T) {
	s := newBodySanitizer(newPolicy())
	var bodies int
	for name, feed := range corpusFeeds(t) {
		var contents []*content
		for _, it := range feed.Items {
			base, _ := url.Parse(it.Link)
			for _, src := range []string{it.Content, it.Description} {
				if strings.TrimSpace(src) != "" {
					contents = append(contents, parseContent(src, base))
				}
			}
		}
		got := make([]string, len(contents))
		b := s.batch()
		for i, c := range contents {
			b.add(c, &got[i], nil)
		}
		for i, c := range contents {
			bodies++
			if want := bluemondayBody(s, c); got[i] != want {
				t.Errorf("%s body %d: batch differs from bluemonday\n got %q\nwant %q", name, i, got[i], want)
			}
		}
	}
	t.Logf("%d bodies", bodies)
}

// TestSanitizeBatchCases checks a batch whose bodies share tags, with bodies
// the walk leaves to bluemonday between them, against bluemonday alone; and
// that a payload's hash is computed from its body.
func TestSanitizeBatchCases(t *testing.T) {
	t.Parallel()
	s := newBodySanitizer(newPolicy())
	base, _ := url.Parse("https://example.org/a/")
	srcs := []string{
		`<p><a href="/x">x</a> <img src="/i.png" width="100"></p>`,
		`<xmp><b>raw</b></xmp><a href="/x">x</a>`,
		`<p><a href="/x">x</a><a href="javascript:y">y</a></p>`,
		`plain text`,
		`<plaintext><a href="/x">`,
		`<p><a href="/x">x</a> <img src="/i.png" width="100"> <a href="/z" title="t">z</a></p>`,
	}
	for range 8 {
		srcs = append(srcs, `<a href="/n">n</a><img src="/j.png">`)
	}
	var contents []*content
	for _, src := range srcs {
		contents = append(contents, parseContent(src, base))
	}
	got := make([]string, len(contents))
	p := &Payload{Title: "t"}
	b := s.batch()
	for i, c := range contents {
		if i == 2 {
			b.add(c, &p.Body, p)
			continue
		}
		b.add(c, &got[i], nil)
	}
	got[2] = p.Body
	for i, c := range contents {
		if want := bluemondayBody(s, c); got[i] != want {
			t.Errorf("%q\n got %q\nwant %q", srcs[i], got[i], want)
		}
	}
	if want := p.computeHash(); p.Hash != want || p.Body == "" {
		t.Errorf("payload hash %q, body %q; want hash %q of the body", p.Hash, p.Body, want)
	}
}

// BenchmarkAppendEscaped is the escaping of a body's text as the walk
// writes it: mostly letters, a few apostrophes.
func BenchmarkAppendEscaped(b *testing.B) {
	s := strings.Repeat("alpha beta gamma delta river stone garden library council budget school harbour's bridge. ", 14)
	w := make([]byte, 0, len(s)+64)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		w = appendEscaped(w[:0], s)
	}
}
