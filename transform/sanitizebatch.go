package transform

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// sanitizeBatch sanitizes consecutive bodies (the items of one feed, or
// of one span of a huge one), reusing its buffers from one body to the
// next. Each body is checked and its tags with attributes judged (check),
// then it is written (write).
type sanitizeBatch struct {
	s        *bodySanitizer
	out      []byte           // the verdicts on the body's tags, in walk order, one after the other
	verdicts []int            // the end of each verdict in out
	clean    []html.Attribute // the judge's scratch
	buf      []byte           // the sanitized HTML, before it is copied out
}

func (s *bodySanitizer) batch() *sanitizeBatch {
	return &sanitizeBatch{s: s}
}

// add sanitizes c into *dst and, when p is not nil, computes p's hash once
// the body is set.
func (bt *sanitizeBatch) add(c *content, dst *string, p *Payload) {
	if bt.collect(c) {
		*dst = bt.write(c)
	} else {
		*dst = strings.TrimSpace(bt.s.policy.Sanitize(c.render()))
	}
	if p != nil {
		p.Hash = p.computeHash()
	}
}

// collect checks c's tree for the walk and judges its tags; false when
// the walk cannot handle it.
func (bt *sanitizeBatch) collect(c *content) bool {
	if bt.s.judge == nil {
		return false
	}
	bt.out, bt.verdicts = bt.out[:0], bt.verdicts[:0]
	for n := range c.root.ChildNodes() {
		if !bt.check(n) {
			return false
		}
	}
	return true
}

// judge judges a tag with attributes; its verdict is the next in walk
// order.
func (bt *sanitizeBatch) judge(name string, attrs []html.Attribute, void bool) {
	bt.out, bt.clean = bt.s.judge.appendVerdict(bt.out, name, attrs, void, bt.clean)
	bt.verdicts = append(bt.verdicts, len(bt.out))
}

// verdict is the output for the body's tag with attributes number i, in
// walk order ("" when the policy drops it).
func (bt *sanitizeBatch) verdict(i int) []byte {
	start := 0
	if i > 0 {
		start = bt.verdicts[i-1]
	}
	return bt.out[start:bt.verdicts[i]]
}

// write writes the sanitized HTML of c, whose tags collect judged.
func (bt *sanitizeBatch) write(c *content) string {
	// Written in the batch's buffer, then copied out at its size: the
	// buffer, about the size of the source plus what the verdicts add
	// (rel and target on links), is grown once for all the bodies.
	if need := c.size + 256 + len(bt.out); cap(bt.buf) < need {
		bt.buf = make([]byte, 0, need)
	}
	w := treeWalk{bt: bt, b: bt.buf[:0]}
	for n := range c.root.ChildNodes() {
		w.write(n)
	}
	bt.buf = w.b[:0]
	return string(bytes.TrimSpace(w.b))
}
