package transform

import (
	"bytes"
	"hash/maphash"
	"strings"

	"golang.org/x/net/html"
)

// sanitizeBatch sanitizes several bodies (consecutive items of one feed)
// with one bluemonday call for all their tags that have attributes, each distinct
// tag judged once: a call's fixed cost (a tokenizer and its 4 KiB buffer,
// the output grown from nothing and copied to a string) was paid per body,
// and the same link or image often recurs in a feed's items. A tag's
// verdict depends on nothing before it in the call (no end tags, no
// skipped content; see sanitizeTree), so sharing a call and a verdict
// changes no output. The bodies' trees are held until the batch is
// flushed; add flushes it when it holds maxBatchBodies bodies or
// maxBatchBytes of source.
type sanitizeBatch struct {
	s       *bodySanitizer
	pending []pendingBody
	size    int // source bytes of the pending bodies

	tags []byte // the distinct tags to judge, separated by NUL
	// index finds a tag's number among them by its hash (a string key
	// would copy every tag): the newest tag with that hash, then the one
	// before it in prev. ends holds where each tag ends in tags.
	index   map[uint64]int32
	prev    []int32
	ends    []int
	seed    maphash.Seed
	slots   []int32 // each pending body's tags, as numbers, in walk order
	scratch []byte  // one tag being rendered

	out      bytes.Buffer // bluemonday's output for tags
	verdicts []int        // the end of each tag's verdict in out
}

// pendingBody is a body added to a batch and not yet written.
type pendingBody struct {
	c *content
	// dst receives the sanitized HTML; p, when not nil, is the payload it
	// belongs to, whose hash is computed once the body is set.
	dst *string
	p   *Payload
	// slots is where the body's tags start in the batch's slots; -1 when
	// the walk cannot handle the tree (bluemonday sanitizes it whole).
	slots int
}

// A batch's bounds: the trees it holds stay live until it is flushed, in
// every poll mapping at once (up to http.max_concurrency); eight bodies
// keep nearly all of the call's saving and little of the memory.
const (
	maxBatchBodies = 8
	maxBatchBytes  = 64 << 10
)

func (s *bodySanitizer) batch() *sanitizeBatch {
	return &sanitizeBatch{s: s, seed: maphash.MakeSeed()}
}

// add queues c's sanitizing: *dst is set (and p's hash computed) by the
// flush that writes it, at the latest the caller's final flush.
func (bt *sanitizeBatch) add(c *content, dst *string, p *Payload) {
	start := len(bt.slots)
	if !bt.collect(c) {
		bt.slots = bt.slots[:start]
		start = -1
	}
	bt.pending = append(bt.pending, pendingBody{c: c, dst: dst, p: p, slots: start})
	bt.size += c.size
	if len(bt.pending) >= maxBatchBodies || bt.size >= maxBatchBytes {
		bt.flush()
	}
}

// collect checks c's tree for the walk and collects its tags; false when
// the walk cannot handle it.
func (bt *sanitizeBatch) collect(c *content) bool {
	for n := range c.root.ChildNodes() {
		if !bt.check(n) {
			return false
		}
	}
	return true
}

// tag returns the number of a tag to judge, adding it when it is new.
func (bt *sanitizeBatch) tag(name string, attrs []html.Attribute, void bool) int32 {
	bt.scratch = appendTag(bt.scratch[:0], name, attrs, void)
	h := maphash.Bytes(bt.seed, bt.scratch)
	last, seen := bt.index[h]
	if seen {
		for i := last; i >= 0; i = bt.prev[i] {
			if bytes.Equal(bt.judged(i), bt.scratch) {
				return i
			}
		}
	} else {
		last = -1
	}
	if bt.index == nil {
		// Sized for a batch's worth of links and images.
		bt.index = make(map[uint64]int32, 128)
		bt.tags = make([]byte, 0, 8<<10)
	}
	if len(bt.ends) > 0 {
		// NUL separates the verdicts: check refused it in attribute
		// values, and bluemonday passes it through as text.
		bt.tags = append(bt.tags, 0)
	}
	bt.tags = append(bt.tags, bt.scratch...)
	i := int32(len(bt.ends))
	bt.ends = append(bt.ends, len(bt.tags))
	bt.prev = append(bt.prev, last)
	bt.index[h] = i
	return i
}

// judged is tag number i as given to bluemonday.
func (bt *sanitizeBatch) judged(i int32) []byte {
	start := 0
	if i > 0 {
		start = bt.ends[i-1] + 1
	}
	return bt.tags[start:bt.ends[i]]
}

// judge has bluemonday judge the collected tags; false when its output
// does not split into one verdict per tag.
func (bt *sanitizeBatch) judge() bool {
	bt.out.Reset()
	bt.verdicts = bt.verdicts[:0]
	if len(bt.ends) == 0 {
		return true
	}
	// Links gain rel and target: room for that, so that the buffer is
	// grown once.
	bt.out.Grow(len(bt.tags) + 48*len(bt.ends))
	if err := bt.s.policy.SanitizeReaderToWriter(bytes.NewReader(bt.tags), &bt.out); err != nil {
		return false
	}
	out := bt.out.Bytes()
	for i, c := range out {
		if c == 0 {
			bt.verdicts = append(bt.verdicts, i)
		}
	}
	bt.verdicts = append(bt.verdicts, len(out))
	return len(bt.verdicts) == len(bt.ends)
}

// verdict is bluemonday's output for tag number i ("" when it drops it).
func (bt *sanitizeBatch) verdict(i int32) []byte {
	start := 0
	if i > 0 {
		start = bt.verdicts[i-1] + 1
	}
	return bt.out.Bytes()[start:bt.verdicts[i]]
}

// write writes the sanitized HTML of c, whose tags are slots.
func (bt *sanitizeBatch) write(c *content, slots []int32) string {
	w := treeWalk{bt: bt, slots: slots}
	// The output is about the size of the source plus what the verdicts
	// add (rel and target on links): grown once, not by doubling.
	grow := c.size + 256
	for _, i := range slots {
		grow += len(bt.verdict(i))
	}
	w.b.Grow(grow)
	for n := range c.root.ChildNodes() {
		w.write(n)
	}
	return strings.TrimSpace(w.b.String())
}

// flush writes every pending body and empties the batch.
func (bt *sanitizeBatch) flush() {
	if len(bt.pending) == 0 {
		return
	}
	walk := bt.judge()
	for i, pb := range bt.pending {
		var body string
		if walk && pb.slots >= 0 {
			end := len(bt.slots)
			for _, next := range bt.pending[i+1:] {
				if next.slots >= 0 {
					end = next.slots
					break
				}
			}
			body = bt.write(pb.c, bt.slots[pb.slots:end])
		} else {
			body = strings.TrimSpace(bt.s.policy.Sanitize(pb.c.render()))
		}
		*pb.dst = body
		if pb.p != nil {
			pb.p.Hash = pb.p.computeHash()
		}
		bt.pending[i] = pendingBody{}
	}
	bt.pending = bt.pending[:0]
	bt.size = 0
	bt.tags = bt.tags[:0]
	clear(bt.index)
	bt.ends = bt.ends[:0]
	bt.prev = bt.prev[:0]
	bt.slots = bt.slots[:0]
}
