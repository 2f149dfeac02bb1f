package transform

import (
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
func parseFragment(src string, parent *html.Node) {
	if parseSimple(src, parent) {
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
func parseSimple(src string, parent *html.Node) bool {
	if strings.IndexByte(src, 0) >= 0 {
		return false // the parser drops NULs from text
	}
	z := html.NewTokenizerFragment(strings.NewReader(src), "body")
	root := &html.Node{Type: html.ElementNode, DataAtom: atom.Html, Data: "html"}
	var stackBuf [16]*html.Node
	stack := append(stackBuf[:0], root)
	var openP, openItem, openDef int // <p>, <li>, <dd> and <dt> elements open
	var openFormat []atom.Atom
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				return false
			}
			break
		}
		tok := z.Token()
		top := stack[len(stack)-1]
		switch tt {
		case html.TextToken:
			d := tok.Data
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
				top.AppendChild(&html.Node{Type: html.TextNode, Data: d})
			}
		case html.CommentToken:
			top.AppendChild(&html.Node{Type: html.CommentNode, Data: tok.Data})
		case html.StartTagToken, html.SelfClosingTagToken:
			kind := simpleKindOf(tok.DataAtom)
			switch {
			case kind == 0, len(stack) > maxSimpleDepth:
				return false
			case kind == kindBlock && openP > 0:
				return false
			case tok.DataAtom == atom.Li && openItem > 0, (tok.DataAtom == atom.Dd || tok.DataAtom == atom.Dt) && openDef > 0:
				return false
			case isHeading(tok.DataAtom) && isHeading(top.DataAtom):
				return false
			case kind == kindFormat && slices.Contains(openFormat, tok.DataAtom):
				return false
			}
			n := &html.Node{Type: html.ElementNode, DataAtom: tok.DataAtom, Data: tok.Data, Attr: tok.Attr}
			if kind == kindFormat {
				slices.SortFunc(n.Attr, compareAttr)
			}
			top.AppendChild(n)
			if kind == kindVoid || tok.DataAtom == atom.Hr {
				continue
			}
			stack = append(stack, n)
			switch tok.DataAtom {
			case atom.P:
				openP++
			case atom.Li:
				openItem++
			case atom.Dd, atom.Dt:
				openDef++
			}
			if kind == kindFormat {
				openFormat = append(openFormat, tok.DataAtom)
			}
		case html.EndTagToken:
			if len(stack) == 1 || top.DataAtom != tok.DataAtom || simpleKindOf(tok.DataAtom) == 0 {
				return false
			}
			stack = stack[:len(stack)-1]
			switch tok.DataAtom {
			case atom.P:
				openP--
			case atom.Li:
				openItem--
			case atom.Dd, atom.Dt:
				openDef--
			}
			if simpleKindOf(tok.DataAtom) == kindFormat {
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
