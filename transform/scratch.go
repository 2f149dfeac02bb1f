package transform

import (
	"golang.org/x/net/html"
)

// scratch is the memory one span of a feed's items (see Map) reuses from
// one item to the next: the nodes and attribute lists of the item's parsed
// bodies, the DOM steps' lists and the sanitizer's buffers. Each body
// otherwise allocated them anew, and the garbage collector's share of the
// worker's CPU grows with the bytes allocated. Nothing built from it may
// outlive the item: reset, before the next item, hands the same memory out
// again.
type scratch struct {
	nodes  []html.Node // the current slab; nodes[:nNodes] are in use
	nNodes int
	attrs  []html.Attribute // attribute lists, cut one after the other
	steps  domSteps
	bodies *sanitizeBatch
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
		sc.nodes = make([]html.Node, max(64, 2*len(sc.nodes)))
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
