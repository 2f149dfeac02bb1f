package transform

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// plainText turns an HTML fragment (or text that may hold entities and
// stray tags, as feed titles do) into one line of plain text: tags removed,
// entities decoded, the content of script-like elements dropped, block
// boundaries turned into spaces, whitespace collapsed.
func plainText(s string) string {
	if s == "" {
		return ""
	}
	// Most titles are plain text already: skip the tokenizer for them.
	if !strings.ContainsAny(s, "<&") {
		return collapseSpace(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0 // depth inside elements whose text is not content
	for {
		switch z.Next() {
		case html.ErrorToken:
			return collapseSpace(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if skipsText(a) {
				skip++
			} else if isBlock(a) {
				b.WriteByte(' ')
			}
		case html.SelfClosingTagToken:
			name, _ := z.TagName()
			if isBlock(atom.Lookup(name)) {
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if skipsText(a) {
				if skip > 0 {
					skip--
				}
			} else if isBlock(a) {
				b.WriteByte(' ')
			}
		}
	}
}

// nodeText is plainText for an already parsed tree; size is the length of
// its source, which the text does not exceed by much (entities decode
// shorter; only block boundaries add spaces). The text is collapsed as it
// is written, in one buffer; that equals collapsing the joined text
// (collapseSpace) when every text node is valid UTF-8, as a decoded feed's
// are: otherwise bytes of one rune could be split between two nodes, and
// the text is joined first.
func nodeText(n *html.Node, size int) string {
	var w spaceCollapser
	w.b.Grow(size)
	if w.node(n) {
		return w.b.String()
	}
	var b strings.Builder
	b.Grow(size)
	joinText(&b, n)
	return collapseSpace(b.String())
}

// node writes n's text; false when a text node is not valid UTF-8.
func (w *spaceCollapser) node(n *html.Node) bool {
	switch n.Type {
	case html.TextNode:
		if !utf8.ValidString(n.Data) {
			return false
		}
		w.writeString(n.Data)
		return true
	case html.ElementNode:
		if skipsText(n.DataAtom) {
			return true
		}
		if isBlock(n.DataAtom) {
			w.writeSpace()
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if !w.node(c) {
					return false
				}
			}
			w.writeSpace()
			return true
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if !w.node(c) {
			return false
		}
	}
	return true
}

// joinText writes n's text, a space at each block boundary, uncollapsed.
func joinText(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(n.Data)
		return
	case html.ElementNode:
		if skipsText(n.DataAtom) {
			return
		}
		if isBlock(n.DataAtom) {
			b.WriteByte(' ')
			defer b.WriteByte(' ')
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		joinText(b, c)
	}
}

// skipsText reports elements whose text is code, styling or a fallback,
// never readable content.
func skipsText(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Object,
		atom.Svg, atom.Math, atom.Head, atom.Title, atom.Textarea, atom.Select, atom.Noembed, atom.Noframes:
		return true
	}
	return false
}

// isBlock reports elements that separate words, so "<p>a</p><p>b</p>" reads
// "a b" and not "ab".
func isBlock(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Br, atom.Div, atom.Li, atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd,
		atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Blockquote, atom.Pre,
		atom.Table, atom.Tr, atom.Td, atom.Th, atom.Caption, atom.Hr, atom.Figure, atom.Figcaption,
		atom.Section, atom.Article, atom.Aside, atom.Header, atom.Footer, atom.Nav, atom.Address,
		atom.Details, atom.Summary, atom.Img:
		return true
	}
	return false
}

// collapseSpace trims s and turns every run of white space into one space.
// Invisible characters (zero-width spaces, byte-order marks, control
// characters) and invalid UTF-8 are dropped, so that two texts that look the
// same compare equal.
func collapseSpace(s string) string {
	if collapsedASCII(s) {
		return s // most titles: nothing to change, nothing to copy
	}
	var w spaceCollapser
	w.b.Grow(len(s))
	w.writeString(s)
	return w.b.String()
}

// collapsedASCII reports printable ASCII that collapseSpace leaves as it
// is: no white space but single spaces between words.
func collapsedASCII(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return s == ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c >= 0x7f || c == ' ' && s[i+1] == ' ' {
			return false
		}
	}
	return true
}

// spaceCollapser writes text collapsed as collapseSpace does, in pieces:
// the pieces written are collapsed as if joined, provided no piece ends
// inside a UTF-8 sequence.
type spaceCollapser struct {
	b     strings.Builder
	space bool // white space seen since the last character written
}

// writeSpace is writeString(" ").
func (w *spaceCollapser) writeSpace() { w.space = w.b.Len() > 0 }

func (w *spaceCollapser) writeString(s string) {
	for i := 0; i < len(s); {
		// ASCII first: it is most of most feeds, and needs no decoding.
		if c := s[i]; c < utf8.RuneSelf {
			if c > ' ' && c < 0x7f {
				// A run of printable characters is copied at once, with
				// the single spaces between them: they are written as
				// they are.
				j := i + 1
				for j < len(s) {
					if c := s[j]; c > ' ' && c < 0x7f {
						j++
					} else if c == ' ' && j+1 < len(s) && s[j+1] > ' ' && s[j+1] < 0x7f {
						j += 2
					} else {
						break
					}
				}
				if w.space {
					w.b.WriteByte(' ')
					w.space = false
				}
				w.b.WriteString(s[i:j])
				i = j
				continue
			}
			i++
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
				w.space = w.b.Len() > 0
			}
			// any other control character is dropped
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			continue
		case unicode.IsSpace(r):
			w.space = w.b.Len() > 0
			continue
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\u2060' || r == '\ufeff' || r == '\u00ad':
			continue
		case unicode.IsControl(r):
			continue
		}
		if w.space {
			w.b.WriteByte(' ')
			w.space = false
		}
		w.b.WriteString(s[i-size : i])
	}
}

// ellipsis marks text cut short.
const ellipsis = "…"

// truncate caps s at max characters (runes). A cut text ends at a word
// boundary followed by an ellipsis, both within max. Text without a word
// boundary in its second half (for example Chinese or Japanese) is cut at a
// character instead.
func truncate(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	if max == 1 {
		return ellipsis
	}
	// Byte offset of the rune at index max-1: room for the ellipsis.
	cut, n := 0, 0
	for i := range s {
		if n == max-1 {
			cut = i
			break
		}
		n++
	}
	head := s[:cut]
	// A cut right before a space needs no backing off.
	if r, _ := utf8.DecodeRuneInString(s[cut:]); !unicode.IsSpace(r) {
		if i := strings.LastIndexFunc(head, unicode.IsSpace); i > 0 && utf8.RuneCountInString(head[:i]) >= (max-1)/2 {
			head = head[:i]
		}
	}
	head = strings.TrimRightFunc(head, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(",;:-–—([{/'\"", r)
	})
	return head + ellipsis
}

// sameText reports whether two plain texts say the same thing, ignoring
// case, and trailing punctuation or ellipsis.
func sameText(a, b string) bool {
	trim := func(s string) string {
		return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	}
	return a != "" && strings.EqualFold(trim(a), trim(b))
}
