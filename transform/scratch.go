package transform

import (
	"strings"

	"golang.org/x/net/html"
)

// scratch is the memory one span of a feed's items (see Map) reuses from
// one item to the next: the nodes and attribute lists of the item's parsed
// bodies, their tokenizer, the DOM steps' lists and the sanitizer's
// buffers. Each body otherwise allocated them anew, and the garbage
// collector's share of the worker's CPU grows with the bytes allocated.
// Nothing built from it may outlive the item: reset, before the next item,
// hands the same memory out again.
type scratch struct {
	nodes  []html.Node // the current slab; nodes[:nNodes] are in use
	nNodes int
	attrs  []html.Attribute // attribute lists, cut one after the other
	steps  domSteps
	bodies *sanitizeBatch
	reader strings.Reader  // the body being tokenized
	fresh  *html.Tokenizer // see tokenizer
	tok    html.Tokenizer
}

// tokenizer returns a tokenizer of src, as html.NewTokenizerFragment(src,
// "body") makes one, without its 4 KB buffer and map each time (a third
// of the bytes a body's mapping allocated): fresh is one such tokenizer,
// never run, reading from sc.reader, and each body's tokenizer is a copy
// of it. The copy shares fresh's buffer and attribute-name map, which the
// tokenizer empties before each use (the buffer starts empty; the map is
// cleared at each tag), so one body at a time may use them (a copy that
// needs a larger buffer grows one of its own). TestScratchCorpus and the
// parseSimple tests, which build every tree in a reused scratch, hold the
// trees equal to the parser's. This leans on how x/net/html's Tokenizer
// keeps its state (checked against v0.62.0's token.go): check it again,
// and run those tests, on every upgrade of x/net.
func (sc *scratch) tokenizer(src string) *html.Tokenizer {
	sc.reader.Reset(src)
	if sc.fresh == nil {
		sc.fresh = html.NewTokenizerFragment(&sc.reader, "body")
	}
	sc.tok = *sc.fresh
	return &sc.tok
}

func newScratch(s *bodySanitizer) *scratch {
	return &scratch{bodies: s.batch()}
}

// reset makes the memory handed out so far free for the next item.
func (sc *scratch) reset() {
	sc.nNodes = 0
	sc.attrs = sc.attrs[:0]
}

// node returns a new node holding n.
func (sc *scratch) node(n html.Node) *html.Node {
	if sc.nNodes == len(sc.nodes) {
		// A new, larger slab: the full one stays where the item's
		// nodes point to, and is dropped at the next reset. The slab
		// grows to the largest item's size and stays there.
		sc.nodes = make([]html.Node, max(16, 2*len(sc.nodes)))
		sc.nNodes = 0
	}
	p := &sc.nodes[sc.nNodes]
	sc.nNodes++
	*p = n
	return p
}

// appendAttr adds a to the attribute list being built, which began at
// len(sc.attrs).
func (sc *scratch) appendAttr(a html.Attribute) {
	if sc.attrs == nil {
		sc.attrs = make([]html.Attribute, 0, 32)
	}
	sc.attrs = append(sc.attrs, a)
}

// attrList returns the list built since start (len(sc.attrs) then), nil
// when empty. Its capacity is its length, so that appending to it
// (setAttr) copies it rather than writing over the next element's list.
func (sc *scratch) attrList(start int) []html.Attribute {
	if len(sc.attrs) == start {
		return nil
	}
	return sc.attrs[start:len(sc.attrs):len(sc.attrs)]
}

// domSteps returns the DOM steps' lists, emptied. One parseContent uses
// them at a time, from start to end.
func (sc *scratch) domSteps() *domSteps {
	s := &sc.steps
	clear(s.images)
	clear(s.quotes)
	clear(s.links)
	s.images, s.quotes, s.links = s.images[:0], s.quotes[:0], s.links[:0]
	return s
}
