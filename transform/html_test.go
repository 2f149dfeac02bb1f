package transform

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// assertInert fails when sanitized HTML holds anything that can run code,
// load active content, style the page or leave the http(s)/mailto schemes.
// It reads the HTML as a browser would (the tokenizer), not by substring.
func assertInert(t *testing.T, where, body string) {
	t.Helper()
	allowed := map[string]bool{}
	for _, e := range []string{
		"p", "br", "hr", "div", "span", "section", "article", "aside", "header", "footer",
		"h1", "h2", "h3", "h4", "h5", "h6", "b", "strong", "i", "em", "u", "s", "strike", "del", "ins",
		"sub", "sup", "small", "big", "mark", "abbr", "cite", "q", "dfn", "code", "kbd", "samp", "var",
		"pre", "blockquote", "tt", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot",
		"tr", "th", "td", "caption", "colgroup", "col", "figure", "figcaption", "details", "summary",
		"time", "address", "center", "a", "img",
	} {
		allowed[e] = true
	}
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt == html.CommentToken || tt == html.DoctypeToken {
			t.Errorf("%s: comment or doctype kept in %q", where, body)
			continue
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken && tt != html.EndTagToken {
			continue
		}
		tok := z.Token()
		if !allowed[tok.Data] {
			t.Errorf("%s: element <%s> kept in %q", where, tok.Data, clipForLog(body))
		}
		for _, a := range tok.Attr {
			k := strings.ToLower(a.Key)
			switch {
			case strings.HasPrefix(k, "on"), k == "style", k == "class", k == "id", k == "srcdoc", k == "formaction":
				t.Errorf("%s: attribute %s kept in %q", where, a.Key, clipForLog(body))
			case k == "href" || k == "src" || k == "cite":
				u, err := url.Parse(a.Val)
				if err != nil || !(u.Scheme == "http" || u.Scheme == "https" || (u.Scheme == "mailto" && k == "href")) {
					t.Errorf("%s: %s=%q is not an absolute http(s) URL", where, a.Key, a.Val)
				}
			}
		}
	}
}

func clipForLog(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestSanitizeHostile runs hostile HTML through the body steps. Each case
// says what must remain; every output must also be inert.
func TestSanitizeHostile(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	base, _ := url.Parse("https://example.org/posts/1")
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"script", `<p>a</p><script>alert(1)</script><p>b</p>`, `<p>a</p><p>b</p>`},
		{"script in attribute-less case", `<SCRIPT SRC=//evil.example/x.js></SCRIPT>ok`, `ok`},
		{"onerror", `<img src="x.jpg" onerror="alert(1)">`, `<img src="https://example.org/posts/x.jpg"/>`},
		{"onclick on link", `<a href="/a" onclick="steal()">a</a>`, `<a href="https://example.org/a" rel="nofollow noopener" target="_blank">a</a>`},
		{"javascript link", `<a href="javascript:alert(1)">x</a>`, `x`},
		{"javascript link with entities", `<a href="jav&#x09;ascript:alert(1)">x</a>`, `x`},
		{"javascript link upper case", `<a href=" JaVaScRiPt:alert(1)">x</a>`, `x`},
		{"vbscript link", `<a href="vbscript:msgbox(1)">x</a>`, `x`},
		{"data link", `<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>`, `x`},
		{"data image", `<p>a<img src="data:image/png;base64,iVBORw0KGgo=">b</p>`, `<p>ab</p>`},
		{"svg with script", `<p>a</p><svg><script>alert(1)</script><circle onload="alert(2)"/></svg><p>b</p>`, `<p>a</p><p>b</p>`},
		{"svg onload", `<svg onload="alert(1)"><a xlink:href="javascript:alert(2)">x</a></svg>ok`, `ok`},
		{"math", `<math><mtext><a href="javascript:alert(1)">x</a></mtext></math>ok`, `ok`},
		{"base tag", `<base href="https://evil.example/"><a href="/x">x</a>`, `<a href="https://example.org/x" rel="nofollow noopener" target="_blank">x</a>`},
		{"base javascript", `<base href="javascript:/"><img src="a.png" width="300" height="200">`, `<img src="https://example.org/posts/a.png" width="300" height="200"/>`},
		{"css expression in style attribute", `<div style="width: expression(alert(1))">a</div>`, `<div>a</div>`},
		{"css url in style attribute", `<p style="background:url(javascript:alert(1))">a</p>`, `<p>a</p>`},
		{"style element", `<style>body{background:url("javascript:alert(1)")}</style><p>a</p>`, `<p>a</p>`},
		{"style import", `<style>@import "https://evil.example/x.css";</style>a`, `a`},
		{"iframe", `<iframe src="https://evil.example/"></iframe><p>a</p>`, `<p>a</p>`},
		{"iframe srcdoc", `<iframe srcdoc="<script>alert(1)</script>"></iframe>a`, `a`},
		{"object and embed", `<object data="x.swf"><embed src="x.swf"></object>a`, `a`},
		{"form", `<form action="https://evil.example/"><input name="p"><button formaction="javascript:alert(1)">go</button></form>a`, `a`},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">a`, `a`},
		{"link stylesheet", `<link rel="stylesheet" href="https://evil.example/x.css">a`, `a`},
		{"comment", `a<!-- <script>alert(1)</script> -->b`, `ab`},
		{"conditional comment", `<!--[if IE]><script>alert(1)</script><![endif]-->a`, `a`},
		{"unclosed script", `a<script>alert(1)`, `a`},
		// The noscript element ends inside the attribute, as in a browser;
		// what follows is parsed as markup, and must come out inert.
		{"noscript breakout", `<noscript><p title="</noscript><img src=x onerror=alert(1)>">a</p></noscript>b`, `<img src="https://example.org/posts/x"/>&#34;&gt;a<p></p>b`},
		{"class and id", `<p class="x" id="y">a</p>`, `<p>a</p>`},
		{"event handler on every element", `<b onmouseover="alert(1)">a</b>`, `<b>a</b>`},
		{"img with javascript src", `<img src="javascript:alert(1)">a`, `a`},
		{"img srcset only", `<img srcset="big.jpg 2x, small.jpg 1x" width="400" height="300">`, `<img width="400" height="300" src="https://example.org/posts/big.jpg"/>`},
		{"mailto kept", `<a href="mailto:a@example.org">mail</a>`, `<a href="mailto:a@example.org">mail</a>`},
		{"dangling markup", `<img src='https://example.org/a.png?x=`, ``},
		{"mutation via table", `<table><td><style>x</style><img src=x.png onerror=alert(1)></td></table>`, `<table><tbody><tr><td><img src="https://example.org/posts/x.png"/></td></tr></tbody></table>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := m.sanitizeBody(tc.in, base)
			if got != tc.want {
				t.Errorf("sanitize(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			assertInert(t, tc.name, got)
		})
	}
}

// sanitizeBody runs the body steps of Map on one fragment.
func (m *Mapping) sanitizeBody(src string, base *url.URL) string {
	return m.sanitizer.sanitize(parseContent(src, base))
}

func TestContentCleaning(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	base, _ := url.Parse("https://example.org/blog/post.html")
	tests := []struct {
		name, in, want, image string
	}{
		{
			name: "feedflare block and feedburner pixel",
			in: `<p>Text</p><div class="feedflare"><a href="http://feeds.feedburner.com/~ff/x?a=1"><img src="http://feeds.feedburner.com/~ff/x?d=2" border="0"></a></div>` +
				`<img src="http://feeds.feedburner.com/~r/x/~4/abc" height="1" width="1" alt=""/>`,
			want: `<p>Text</p>`,
		},
		{
			name: "feedsportal ad and 1x1 pixel",
			in: `<p>Text</p><img width='1' height='1' src='http://rss.feedsportal.com/c/1/f/2/s/3/mf.gif' border='0'/>` +
				`<br/><a href="http://da.feedsportal.com/r/1/u/0/f/2/c/3/s/4/a2.htm"><img src="http://da.feedsportal.com/r/1/u/0/f/2/c/3/s/4/a2.img" border="0"/></a>`,
			want: `<p>Text</p><br/>`,
		},
		{
			name: "tracking pixel by size only",
			in:   `<p>a<img src="https://stats.example.net/p.gif?id=1" width="1" height="1">b</p>`,
			want: `<p>ab</p>`,
		},
		{
			name: "tracking pixel by style",
			in:   `<p>a<img src="https://stats.example.net/p.gif" style="width:1px;height:1px">b</p>`,
			want: `<p>ab</p>`,
		},
		{
			name: "wordpress share buttons",
			in:   `<p>Text</p><a rel="nofollow" href="http://feeds.wordpress.com/1.0/gocomments/x.wordpress.com/1/"><img alt="" border="0" src="http://feeds.wordpress.com/1.0/comments/x.wordpress.com/1/" /></a> <a rel="nofollow" href="http://feeds.wordpress.com/1.0/godelicious/x/1/"></a>`,
			want: `<p>Text</p>`,
		},
		{
			name:  "relative URLs against the item link",
			in:    `<p><a href="../about">about</a> <a href="#top">top</a> <img src="/img/a.jpg" width="640" height="480"></p>`,
			want:  `<p><a href="https://example.org/about" rel="nofollow noopener" target="_blank">about</a> <a href="https://example.org/blog/post.html#top" rel="nofollow noopener" target="_blank">top</a> <img src="https://example.org/img/a.jpg" width="640" height="480"/></p>`,
			image: "https://example.org/img/a.jpg",
		},
		{
			name:  "icons are kept in the body but are not the image",
			in:    `<p><img src="https://s.w.org/images/core/emoji/72x72/1f600.png" alt=":)"> <img src="/i.png" width="16" height="16"> <img src="/photo.jpg"></p>`,
			want:  `<p><img src="https://s.w.org/images/core/emoji/72x72/1f600.png" alt=":)"/> <img src="https://example.org/i.png" width="16" height="16"/> <img src="https://example.org/photo.jpg"/></p>`,
			image: "https://example.org/photo.jpg",
		},
		{
			name:  "lazy-loaded image",
			in:    `<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="/real.jpg">`,
			want:  `<img src="https://example.org/real.jpg"/>`,
			image: "https://example.org/real.jpg",
		},
		{
			name: "plain text gets paragraphs",
			in:   "First line\nsecond line\n\nSecond paragraph & more",
			want: `<p>First line<br/>second line</p><p>Second paragraph &amp; more</p>`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := parseContent(tc.in, base)
			got := m.sanitizer.sanitize(c)
			if got != tc.want {
				t.Errorf("body\n got %q\nwant %q", got, tc.want)
			}
			if c.image != tc.image {
				t.Errorf("image: got %q, want %q", c.image, tc.image)
			}
			assertInert(t, tc.name, got)
		})
	}
}
