package transform

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseFragment parses src as html.ParseFragment does in a <body>, and
// appends the nodes to parent. Most feed HTML is properly nested markup
// of common elements, for which the HTML5 tree construction adds,
// moves and drops nothing: parseSimple builds that tree from
// x/net/html's own tokens without the parser's insertion modes, scope
// searches and stacks, and leaves everything else to html.ParseFragment
// (TestParseSimpleCorpus and FuzzParseSimple compare the two trees).
func parseFragment(src string, parent *html.Node, sc *scratch) {
	if parseSimple(src, parent, sc) {
		return
	}
	nodes, err := html.ParseFragment(strings.NewReader(src), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		// Only a failing reader errors, or a tree deeper than the
		// parser allows; a strings.Reader does not fail.
		return
	}
	for _, n := range nodes {
		parent.AppendChild(n)
	}
}

// maxSimpleDepth is the deepest tree parseSimple builds; deeper ones are
// the parser's (it refuses more than 512 open elements).
const maxSimpleDepth = 100

// simpleKind is what the body insertion mode does with an element's start
// tag, for the elements parseSimple handles.
type simpleKind uint8

const (
	kindOther  simpleKind = iota + 1 // inserted as it is
	kindBlock                        // closes an open <p> first
	kindFormat                       // a formatting element: its attributes are sorted
	kindVoid                         // inserted and closed at once
)

// simpleKindOf is the kind of the element a start tag names (0: not one
// parseSimple handles).
func simpleKindOf(a atom.Atom) simpleKind {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center, atom.Details, atom.Dir, atom.Div,
		atom.Dl, atom.Figcaption, atom.Figure, atom.Footer, atom.Header, atom.Hgroup, atom.Main, atom.Menu, atom.Nav,
		atom.Ol, atom.P, atom.Search, atom.Section, atom.Summary, atom.Ul,
		atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Pre, atom.Li, atom.Dd, atom.Dt, atom.Hr:
		return kindBlock
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.S, atom.Small, atom.Strike, atom.Strong,
		atom.Tt, atom.U:
		return kindFormat
	case atom.Br, atom.Img, atom.Wbr:
		return kindVoid
	case atom.Span, atom.Sub, atom.Sup, atom.Abbr, atom.Cite, atom.Q, atom.Mark, atom.Time, atom.Dfn, atom.Kbd,
		atom.Samp, atom.Var, atom.Bdi, atom.Bdo, atom.Data, atom.Ins, atom.Del, atom.Label:
		return kindOther
	}
	return 0
}

// parseSimple appends to parent the tree html.ParseFragment builds for
// src in a <body>, and reports true, when src holds only the elements
// simpleKindOf lists, properly nested: every end tag closes the element
// opened last, and no start tag is one the parser would answer by
// closing or reopening other elements (a block inside an open <p>, a list
// item inside an open one, a heading right in a heading, a link inside a
// link, a formatting element inside one of its own kind). For such input
// the parser's tree is the tokens' nesting, with three rules of its own
// kept here: adjacent text joins into one node, a newline right after
// <pre> is dropped, and a formatting element's attributes are sorted
// (its Noah's Ark clause compares them so). Otherwise it reports false
// and leaves parent as it was.
func parseSimple(src string, parent *html.Node, sc *scratch) bool {
	if strings.IndexByte(src, 0) >= 0 {
		return false // the parser drops NULs from text
	}
	z := sc.tokenizer(src)
	root := sc.node(html.Node{Type: html.ElementNode, DataAtom: atom.Html, Data: "html"})
	var stackBuf [16]*html.Node
	stack := append(stackBuf[:0], root)
	var openP, openItem, openDef int // <p>, <li>, <dd> and <dt> elements open
	var openFormat []atom.Atom
	// The tokens are read with the tokenizer's accessors rather than
	// Token, which copies every text: a text that is its own source is
	// taken from src, where the token starts at at (the tokens' raw bytes
	// partition the input; pos is where the next one starts). Attribute
	// values are copied: TagAttr makes a copy anyway, and looking each up
	// in its tag's bytes made a tag with many attributes quadratic.
	pos := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				return false
			}
			break
		}
		raw := z.Raw()
		at := pos
		pos += len(raw)
		top := stack[len(stack)-1]
		switch tt {
		case html.TextToken:
			d := sourceText(src, at, raw)
			if d == "" {
				d = string(z.Text())
			}
			if top.DataAtom == atom.Pre && top.FirstChild == nil {
				d = strings.TrimPrefix(d, "\r")
				d = strings.TrimPrefix(d, "\n")
			}
			if d == "" {
				continue
			}
			if last := top.LastChild; last != nil && last.Type == html.TextNode {
				last.Data += d
			} else {
				top.AppendChild(sc.node(html.Node{Type: html.TextNode, Data: d}))
			}
		case html.CommentToken:
			top.AppendChild(sc.node(html.Node{Type: html.CommentNode, Data: string(z.Text())}))
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			kind := simpleKindOf(a)
			switch {
			case kind == 0, len(stack) > maxSimpleDepth:
				return false
			case kind == kindBlock && openP > 0:
				return false
			case a == atom.Li && openItem > 0, (a == atom.Dd || a == atom.Dt) && openDef > 0:
				return false
			case isHeading(a) && isHeading(top.DataAtom):
				return false
			case kind == kindFormat && slices.Contains(openFormat, a):
				return false
			}
			// The attributes as Token reads them.
			start := len(sc.attrs)
			for hasAttr {
				var key, val []byte
				key, val, hasAttr = z.TagAttr()
				sc.appendAttr(html.Attribute{Key: atom.String(key), Val: string(val)})
			}
			n := sc.node(html.Node{Type: html.ElementNode, DataAtom: a, Data: a.String(), Attr: sc.attrList(start)})
			if kind == kindFormat {
				slices.SortFunc(n.Attr, compareAttr)
			}
			top.AppendChild(n)
			if kind == kindVoid || a == atom.Hr {
				continue
			}
			stack = append(stack, n)
			switch a {
			case atom.P:
				openP++
			case atom.Li:
				openItem++
			case atom.Dd, atom.Dt:
				openDef++
			}
			if kind == kindFormat {
				openFormat = append(openFormat, a)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if len(stack) == 1 || a == 0 || top.DataAtom != a || simpleKindOf(a) == 0 {
				return false
			}
			stack = stack[:len(stack)-1]
			switch a {
			case atom.P:
				openP--
			case atom.Li:
				openItem--
			case atom.Dd, atom.Dt:
				openDef--
			}
			if simpleKindOf(a) == kindFormat {
				openFormat = openFormat[:len(openFormat)-1]
			}
		default: // a doctype
			return false
		}
	}
	for c := root.FirstChild; c != nil; {
		next := c.NextSibling
		root.RemoveChild(c)
		parent.AppendChild(c)
		c = next
	}
	return true
}

// sourceText returns the text of a text token whose raw bytes, raw, start
// at at in src, when the text is those bytes as they are: no character
// reference to decode and no carriage return to convert (Text does both,
// in place: call it after). It returns "" otherwise. The raw bytes are
// src's from at on (the tokens' raw bytes partition the input); the
// comparison makes sure of it.
func sourceText(src string, at int, raw []byte) string {
	end := at + len(raw)
	if end > len(src) || bytes.IndexByte(raw, '&') >= 0 || bytes.IndexByte(raw, '\r') >= 0 || src[at:end] != string(raw) {
		return ""
	}
	return src[at:end]
}

func isHeading(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

// compareAttr orders attributes as the parser sorts a formatting
// element's.
func compareAttr(a, b html.Attribute) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Val, b.Val)
}
