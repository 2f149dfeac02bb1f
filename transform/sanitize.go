package transform

import (
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"golang.org/x/net/html"
)

// bodySanitizer applies the body policy to the tree parseContent built,
// without rendering it and tokenizing it again: that second pass was about
// half of the mapping's CPU. Its output is, byte for byte, what
// bluemonday's Sanitize gives for the rendered tree (TestTreeSanitizerCorpus
// compares the two on every body of the corpus): it replays bluemonday's
// loop on the tokens html.Render would write, and each allowed tag with
// attributes is judged by the policy's rules as bluemonday applies them
// (tagJudge; TestTagJudge holds it to bluemonday's answer, tag by tag).
// The tags without attributes are judged by bluemonday itself, once, when
// the sanitizer is built. Trees holding anything whose render and
// re-tokenizing is not plain (raw-text elements, foreign content, NUL
// bytes, elements whose content bluemonday skips) go through bluemonday
// whole, as before.
type bodySanitizer struct {
	policy  *bluemonday.Policy
	judge   *tagJudge
	allowed map[string]bool
	// bare holds the policy's verdict on each allowed tag with no
	// attributes ("" when it drops it).
	bare map[string]string
	// judgeOff says why judge is nil: it wrote a probe otherwise than
	// bluemonday (judgeProbes), and every body goes through bluemonday.
	judgeOff string
}

func newBodySanitizer(p *bluemonday.Policy) *bodySanitizer {
	s := &bodySanitizer{policy: p, allowed: map[string]bool{}, bare: map[string]string{}}
	for _, list := range [][]string{bodyElements(), attrElements()} {
		for _, name := range list {
			s.allowed[name] = true
			s.bare[name] = p.Sanitize(tagString(name, nil, isVoid(name)))
		}
	}
	s.judge = newTagJudge(bodyAttrRules(), bodyURLSchemes(), s.bare)
	if d := s.judge.disagreement(p); d != "" {
		s.judge, s.judgeOff = nil, d
	}
	return s
}

// sanitize returns the content's body HTML, sanitized and trimmed.
func (s *bodySanitizer) sanitize(c *content) string {
	var out string
	s.batch().add(c, &out, nil)
	return out
}

// sanitizeTree is sanitize by the tree walk alone; false when the tree
// holds something the walk leaves to bluemonday.
func (s *bodySanitizer) sanitizeTree(c *content) (string, bool) {
	b := s.batch()
	if !b.collect(c) {
		return "", false
	}
	return b.write(c), true
}

// treeWalk is one sanitizing walk. skip is bluemonday's stack of end tags
// to leave out: those of allowed elements it dropped for want of
// attributes. It matches them by name, as bluemonday does.
type treeWalk struct {
	bt   *sanitizeBatch
	b    []byte
	skip []string
	next int // the number of the next tag with attributes, in walk order
}

// check reports whether n renders and tokenizes back to the same tokens
// (see plainElement), and judges its allowed tags with attributes.
func (bt *sanitizeBatch) check(n *html.Node) bool {
	switch n.Type {
	case html.TextNode:
		return strings.IndexByte(n.Data, 0) < 0
	case html.ElementNode:
	default:
		return false // comments are pruned; anything else is not plain
	}
	name := n.Data
	if n.Namespace != "" || !plainElement(name) {
		return false
	}
	for _, a := range n.Attr {
		if a.Namespace != "" || strings.IndexByte(a.Val, 0) >= 0 || !plainName(a.Key) {
			return false
		}
	}
	void := isVoid(name)
	if void && n.FirstChild != nil {
		return false // Render fails on it
	}
	if bt.s.allowed[name] && len(n.Attr) > 0 {
		bt.judge(name, n.Attr, void)
	}
	for c := range n.ChildNodes() {
		if !bt.check(c) {
			return false
		}
	}
	return true
}

// write writes what bluemonday writes for n's rendered tokens.
func (w *treeWalk) write(n *html.Node) {
	if n.Type == html.TextNode {
		// Render escapes text and the tokenizer unescapes it; bluemonday
		// writes it escaped again: the same escaping, once.
		w.b = appendEscaped(w.b, n.Data)
		return
	}
	name := n.Data
	void := isVoid(name)
	allowed := w.bt.s.allowed[name]
	if allowed {
		var dropped bool
		if len(n.Attr) > 0 {
			v := w.bt.verdict(w.next)
			w.next++
			w.b = append(w.b, v...)
			dropped = len(v) == 0
		} else {
			out := w.bt.s.bare[name]
			w.b = append(w.b, out...)
			dropped = out == ""
		}
		if dropped && !void {
			w.skip = append(w.skip, name)
		}
	}
	if void {
		return
	}
	// Render adds a newline where a parser would drop the first one.
	if c := n.FirstChild; name == "pre" && c != nil && c.Type == html.TextNode && strings.HasPrefix(c.Data, "\n") {
		w.b = append(w.b, '\n')
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.write(c)
	}
	if k := len(w.skip); k > 0 && w.skip[k-1] == name {
		w.skip = w.skip[:k-1]
	} else if allowed {
		w.b = append(w.b, "</"...)
		w.b = append(w.b, name...)
		w.b = append(w.b, '>')
	}
}

// tagString is the start tag Render writes for an element: self-closing
// for a void element.
func tagString(name string, attrs []html.Attribute, void bool) string {
	return string(appendTag(nil, name, attrs, void))
}

// appendTag appends the start tag Render writes for an element to b, as
// html.Token's String does, without the token's own buffers and strings
// (attribute values escaped as Token.String escapes them;
// TestWriteTagIsTokenString holds them equal).
func appendTag(b []byte, name string, attrs []html.Attribute, void bool) []byte {
	b = append(b, '<')
	b = append(b, name...)
	for _, a := range attrs {
		b = append(b, ' ')
		b = append(b, a.Key...)
		b = append(b, `="`...)
		b = appendEscaped(b, a.Val)
		b = append(b, '"')
	}
	if void {
		return append(b, "/>"...)
	}
	return append(b, '>')
}

// appendEscaped appends s escaped as html.EscapeString escapes it, without
// the copy EscapeString makes of each string it escapes
// (TestEscapedIsEscapeString holds them equal).
func appendEscaped(b []byte, s string) []byte {
	for {
		i := nextEscaped(s)
		if i < 0 {
			return append(b, s...)
		}
		b = append(b, s[:i]...)
		b = append(b, htmlEscape(s[i])...)
		s = s[i+1:]
	}
}

// nextEscaped is the index of the first byte of s that htmlEscape
// escapes, or -1: all of them are below 64, so one constant mask tells
// them, cheaper than htmlEscape's switch on every byte.
func nextEscaped(s string) int {
	const escaped uint64 = 1<<'&' | 1<<'\'' | 1<<'<' | 1<<'>' | 1<<'"' | 1<<'\r'
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 64 && escaped>>c&1 != 0 {
			return i
		}
	}
	return -1
}

// htmlEscape is the entity html.EscapeString writes for c, or "" when it
// leaves c as it is.
func htmlEscape(c byte) string {
	switch c {
	case '&':
		return "&amp;"
	case '\'':
		return "&#39;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	case '"':
		return "&#34;"
	case '\r':
		return "&#13;"
	}
	return ""
}

// plainElement reports element and attribute names that render and
// tokenize back unchanged and that bluemonday handles with its general
// rules: lower-case letters, digits and hyphens, and none of the elements
// whose content is raw text for the tokenizer, that Render writes
// specially, or whose content bluemonday skips.
func plainElement(name string) bool {
	if !plainName(name) {
		return false
	}
	switch name {
	case "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext",
		"listing", "frameset", "object", "nostyle", "template", "svg", "math":
		return false
	}
	return true
}

// plainName reports names of lower-case letters, digits and hyphens,
// starting with a letter.
func plainName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isVoid lists the elements html.Render writes as <name/>.
func isVoid(name string) bool {
	switch name {
	case "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr":
		return true
	}
	return false
}
