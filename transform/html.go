package transform

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// content is an item's HTML after the DOM steps, before sanitizing.
type content struct {
	root *html.Node // a <div> whose children are the fragment
	// image is the first sizeable image, absolute http(s), or "".
	image string
	// rejected holds image URLs judged tracking pixels or icons, so that
	// gofeed's own pick (the first <img>, whatever it is) can be refused.
	rejected map[string]bool
	// firstSrc is the src of the first <img> that has a src attribute, in
	// document order as parsed, before the DOM steps; hasFirstSrc tells an
	// empty src from none. It is the pick gofeed's RSS translator makes for
	// Item.Image when it parses the HTML itself (feeds turns that off:
	// one parse per body).
	firstSrc    string
	hasFirstSrc bool
	// size is the source's length, to size the text and HTML written
	// from the tree.
	size int
}

// parseContent parses an HTML fragment (or plain text) and runs the DOM
// steps on it: elements that are never content are removed with their
// text, feed-ad blocks and tracking pixels are dropped, lazy-loaded images
// get their real source, and every URL is made absolute against base (a
// <base> element in the content is ignored: it is removed, never obeyed).
func parseContent(src string, base *url.URL) *content {
	return parseContentIn(&scratch{}, src, base)
}

// parseContentIn is parseContent building the tree from sc's memory: the
// content must not outlive sc's next reset.
func parseContentIn(sc *scratch, src string, base *url.URL) *content {
	c := &content{root: sc.node(html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})}
	src = strings.TrimSpace(src)
	if src == "" {
		return c
	}
	if !looksLikeHTML(src) {
		src = textToHTML(src)
	}
	c.size = len(src)
	parseFragment(src, c.root, sc)
	c.firstSrc, c.hasFirstSrc = firstImgSrc(c.root)

	// The elements each step works on, in document order, gathered by
	// the pruning walk: one walk where goquery made one per step.
	steps := sc.domSteps()
	steps.prune(c.root)
	for _, n := range steps.images {
		c.handleImage(n, base)
	}
	for _, l := range steps.links {
		resolveHref(l.n, l.href, l.plain, base)
		// Share buttons and feedflare links are empty once their images are
		// gone; an empty link is invisible anyway.
		if isEmpty(l.n) {
			removeNode(l.n)
		}
	}
	// A quote inside a link removed above is out of the tree: resolving
	// its cite changes nothing that is written.
	for _, n := range steps.quotes {
		resolveAttr(n, "cite", base, false)
	}
	return c
}

// handleImage handles one <img>: it takes the real source of a lazy-loaded image,
// makes it absolute, drops tracking pixels and images that cannot load, and
// keeps the first sizeable one as the content's image.
func (c *content) handleImage(n *html.Node, base *url.URL) {
	src := attr(n, "src")
	if src == "" || strings.HasPrefix(strings.ToLower(strings.TrimSpace(src)), "data:") {
		for _, k := range []string{"data-src", "data-lazy-src", "data-original", "data-orig-file"} {
			if v := attr(n, k); v != "" {
				src = v
				break
			}
		}
	}
	if src == "" || strings.HasPrefix(strings.ToLower(strings.TrimSpace(src)), "data:") {
		src = firstSrcset(attr(n, "srcset"))
	}
	abs, host, path, ok := absoluteString(src, base)
	w, h := imageSize(n)
	if !ok || (w > 0 && w <= 2) || (h > 0 && h <= 2) || isTrackerURL(host, path) {
		if ok {
			c.reject(abs)
		}
		if raw := attr(n, "src"); raw != "" {
			c.reject(raw)
		}
		removeNode(n)
		return
	}
	setAttr(n, "src", abs)
	if (w > 0 && w < minImageSide) || (h > 0 && h < minImageSide) || isIconURL(host, path) {
		c.reject(abs)
		return
	}
	if c.image == "" {
		c.image = abs
	}
}

// firstImgSrc returns the src of the first <img> under n, in document
// order, that has a src attribute (gofeed's firstImgWithSrc).
func firstImgSrc(n *html.Node) (string, bool) {
	if n.Type == html.ElementNode && n.Data == "img" {
		for _, a := range n.Attr {
			if a.Key == "src" {
				return a.Val, true
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if src, ok := firstImgSrc(c); ok {
			return src, true
		}
	}
	return "", false
}

func (c *content) reject(u string) {
	if c.rejected == nil {
		c.rejected = make(map[string]bool)
	}
	c.rejected[u] = true
}

// minImageSide is the smallest width or height of an image worth showing
// as the item's picture; smaller ones are icons, emoji and buttons.
const minImageSide = 50

// render serializes the cleaned fragment.
func (c *content) render() string {
	var b strings.Builder
	for n := range c.root.ChildNodes() {
		if err := html.Render(&b, n); err != nil {
			break // a strings.Builder does not fail
		}
	}
	return strings.TrimSpace(b.String())
}

// text returns the cleaned fragment's plain text.
func (c *content) text() string { return nodeText(c.root, c.size) }

// domSteps holds the elements the DOM steps after pruning work on.
type domSteps struct {
	images, quotes []*html.Node
	links          []link
}

// link is an <a> and its href as isJunk parsed it (nil when it has none,
// it did not parse, or it is plain: see plainURL).
type link struct {
	n     *html.Node
	href  *url.URL
	plain bool
}

// prune removes junk elements (see isJunk) and comments, and drops every
// attribute the sanitizer would drop anyway. The sanitizer still decides;
// this makes its input smaller (feed HTML is heavy with class, style and
// data- attributes) and keeps them out of the image and link steps. It
// gathers the images, links and quotes that remain, in document order.
func (s *domSteps) prune(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		junk, href, plain := isJunk(c)
		switch {
		case c.Type == html.CommentNode || junk:
			n.RemoveChild(c)
		case c.Type == html.ElementNode:
			kept := c.Attr[:0]
			for _, a := range c.Attr {
				if a.Namespace == "" && keepAttr(c.DataAtom, a.Key) {
					kept = append(kept, a)
				}
			}
			c.Attr = kept
			switch c.DataAtom {
			case atom.Img:
				s.images = append(s.images, c)
			case atom.A:
				s.links = append(s.links, link{n: c, href: href, plain: plain})
			case atom.Blockquote, atom.Q, atom.Del, atom.Ins:
				s.quotes = append(s.quotes, c)
			}
			s.prune(c)
		}
		c = next
	}
}

// keepAttr lists the attributes the body policy allows, plus those the
// image step reads on <img> (style for sizes, lazy-loading sources). Class
// is gone by now: isJunk has read it.
func keepAttr(el atom.Atom, key string) bool {
	switch key {
	case "href", "src", "alt", "title", "width", "height", "colspan", "rowspan", "start", "cite", "datetime", "lang", "dir":
		return true
	case "style", "srcset", "data-src", "data-lazy-src", "data-original", "data-orig-file":
		return el == atom.Img
	}
	return false
}

// isJunk reports elements removed with everything inside them: active
// content, forms, document-level elements (<base> among them, so it cannot
// redirect relative URLs) and feed-ad blocks. For a link it returns the
// href it parsed, for the link step to resolve, or that the href is plain
// (see plainURL) and needs neither parse nor resolve.
func isJunk(n *html.Node) (junk bool, href *url.URL, plain bool) {
	if n.Type != html.ElementNode {
		return false, nil, false
	}
	if n.Namespace != "" { // inside <svg> or <math>
		return true, nil, false
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Iframe, atom.Frame, atom.Frameset, atom.Object, atom.Embed, atom.Applet,
		atom.Form, atom.Input, atom.Button, atom.Select, atom.Textarea, atom.Base, atom.Meta, atom.Link,
		atom.Svg, atom.Math, atom.Template, atom.Noscript, atom.Audio, atom.Video, atom.Canvas, atom.Dialog,
		atom.Head, atom.Title, atom.Noembed, atom.Noframes:
		return true, nil, false
	case atom.Div, atom.P, atom.Span, atom.Table:
		for class := range strings.FieldsSeq(attr(n, "class")) {
			switch strings.ToLower(class) {
			case "feedflare", "mf-viral", "feedburnerfeedblock", "pheedo", "fb-ad", "feedsportal-ad":
				return true, nil, false
			}
		}
	case atom.A:
		if href := attr(n, "href"); href != "" {
			href = strings.TrimSpace(href)
			if host, path, ok := plainURL(href); ok {
				return isAdHost(host, path), nil, true
			}
			if u, err := url.Parse(href); err == nil {
				return isAdLink(u), u, false
			}
		}
	}
	return false, nil, false
}

// isAdLink reports links that feed services insert as ads or share buttons.
func isAdLink(u *url.URL) bool { return isAdHost(u.Hostname(), u.Path) }

// isAdHost is isAdLink of a URL's host name and path.
func isAdHost(host, path string) bool {
	host = strings.ToLower(host)
	switch {
	case (host == "feeds.feedburner.com" || strings.HasPrefix(host, "feeds.")) && (strings.HasPrefix(path, "/~a/") || strings.HasPrefix(path, "/~ff/")):
		return true // FeedBurner ads and "flares", also on a publisher's own feeds.* domain
	case host == "da.feedsportal.com", host == "ads.pheedo.com", host == "feedads.g.doubleclick.net",
		strings.HasSuffix(host, ".doubleclick.net"):
		return true
	case host == "feeds.wordpress.com" && strings.HasPrefix(path, "/1.0/go"):
		return true
	}
	return false
}

// isTrackerURL reports images that only count readers, by their URL's
// host name and path.
func isTrackerURL(host, path string) bool {
	host, path = strings.ToLower(host), strings.ToLower(path)
	switch {
	case (host == "feeds.feedburner.com" || strings.HasPrefix(host, "feeds.")) &&
		(strings.HasPrefix(path, "/~r/") || strings.HasPrefix(path, "/~ff/") || strings.HasPrefix(path, "/~a/")):
		return true
	case strings.HasSuffix(host, "feedsportal.com"), strings.HasSuffix(host, "pheedo.com"),
		strings.HasSuffix(host, ".doubleclick.net"), host == "stats.wordpress.com", host == "pixel.wp.com",
		host == "www.google-analytics.com", host == "feeds.wordpress.com", host == "pixel.quantserve.com",
		host == "b.scorecardresearch.com", host == "sb.scorecardresearch.com":
		return true
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	switch base {
	case "spacer.gif", "blank.gif", "pixel.gif", "1x1.gif", "clear.gif", "transparent.gif", "t.gif", "pixel.png":
		return true
	}
	return false
}

// isIconURL reports images that are part of the page furniture rather than
// the story: emoji, smilies, avatars, favicons, buttons (by the URL's host
// name and path).
func isIconURL(host, path string) bool {
	host, path = strings.ToLower(host), strings.ToLower(path)
	if host == "s.w.org" || strings.HasSuffix(host, "gravatar.com") {
		return true
	}
	for _, s := range []string{"/emoji/", "/smilies/", "/smileys/", "/icons/", "favicon", "/avatar", "/buttons/", "/share"} {
		if strings.Contains(path, s) {
			return true
		}
	}
	return false
}

// imageSize reads an <img>'s declared width and height (0 when unknown),
// from its attributes or its inline style.
func imageSize(n *html.Node) (w, h int) {
	w, h = pixels(attr(n, "width")), pixels(attr(n, "height"))
	if style := strings.ToLower(attr(n, "style")); style != "" {
		for decl := range strings.SplitSeq(style, ";") {
			k, v, _ := strings.Cut(decl, ":")
			switch strings.TrimSpace(k) {
			case "width":
				if p := pixels(v); p > 0 {
					w = p
				}
			case "height":
				if p := pixels(v); p > 0 {
					h = p
				}
			}
		}
	}
	return w, h
}

// pixels reads "1", "1px" or " 1 px" as 1; anything else (percentages,
// "auto") as 0, unknown.
func pixels(s string) int {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.ToLower(s)), "px"))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	if n == 0 {
		return 1 // width="0" hides an image as surely as width="1"
	}
	return n
}

// firstSrcset returns the first URL of a srcset attribute.
func firstSrcset(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	first, _, _ := strings.Cut(s, ",")
	u, _, _ := strings.Cut(strings.TrimSpace(first), " ")
	return u
}

// resolveAttr makes a URL attribute absolute, or removes it when it is not
// an http(s) URL (mailto: too, when allowMailto).
func resolveAttr(n *html.Node, key string, base *url.URL, allowMailto bool) {
	v := attr(n, key)
	if v == "" {
		return
	}
	if allowMailto && strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "mailto:") {
		return
	}
	if u, ok := absoluteURL(v, base); ok {
		setAttr(n, key, u.String())
		return
	}
	removeAttr(n, key)
}

// resolveHref is resolveAttr for a link's href, which isJunk parsed as u
// (nil when it did not) or found plain: the parse is not repeated where
// absoluteURL would parse the same text, and a plain URL is absolute
// already, written as net/url would write it.
func resolveHref(n *html.Node, u *url.URL, plain bool, base *url.URL) {
	v := attr(n, "href")
	raw := strings.TrimSpace(v)
	if plain && len(raw) <= maxURLLen {
		if raw != v {
			setAttr(n, "href", raw)
		}
		return
	}
	if u == nil || raw == "" || len(raw) > maxURLLen || strings.ContainsAny(raw, "\t\n\r") ||
		strings.HasPrefix(strings.ToLower(raw), "mailto:") {
		resolveAttr(n, "href", base, true)
		return
	}
	if abs, ok := resolveURL(u, raw, base); ok {
		setAttr(n, "href", abs.String())
		return
	}
	removeAttr(n, "href")
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

func removeAttr(n *html.Node, key string) {
	out := n.Attr[:0]
	for _, a := range n.Attr {
		if a.Namespace != "" || a.Key != key {
			out = append(out, a)
		}
	}
	n.Attr = out
}

func removeNode(n *html.Node) {
	if n.Parent != nil {
		n.Parent.RemoveChild(n)
	}
}

// isEmpty reports an element with no text and no image inside.
func isEmpty(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			if strings.TrimSpace(c.Data) != "" {
				return false
			}
		case html.ElementNode:
			if c.DataAtom == atom.Img || !isEmpty(c) {
				return false
			}
		}
	}
	return true
}

// looksLikeHTML reports whether s has something that reads as a tag or a
// comment; without one it is plain text, whose line breaks carry its
// paragraphs.
func looksLikeHTML(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '<' {
			if c := s[i+1]; c == '/' || c == '!' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
				return true
			}
		}
	}
	return false
}

// textToHTML turns plain text into paragraphs: blank lines separate them,
// single line breaks become <br>. Entities in the text are decoded first,
// because a plain-text field holding "&amp;" was escaped once too often.
func textToHTML(s string) string {
	s = html.UnescapeString(strings.ReplaceAll(s, "\r\n", "\n"))
	var b strings.Builder
	for para := range strings.SplitSeq(s, "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		b.WriteString("<p>")
		for i, line := range strings.Split(para, "\n") {
			if i > 0 {
				b.WriteString("<br>")
			}
			b.WriteString(html.EscapeString(strings.TrimSpace(line)))
		}
		b.WriteString("</p>")
	}
	return b.String()
}
