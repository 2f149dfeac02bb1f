package dedupe

import (
	"context"
	"fmt"
)

// A fetch of 100,000 items is too much for one Redis script (it outlasts
// the client's per-call timeout and blocks the server meanwhile) or one
// bbolt transaction (a stop would wait for all of it). Diff and Commit
// therefore work in steps of at most stepItems items and about stepBytes
// of payload, each step atomic and each preceded by a look at the
// context. What makes a step safe to be the last one done:
//
//   - Diff only refreshes last-seen times of items that have a record;
//     it stores validators (in its last step, and only when no step found
//     anything new or changed) and sweeps in its last step.
//   - Commit records items with their outbox entries in the same step, so
//     an item is never recorded without its delivery or queued twice: a
//     redo finds it recorded with the same hash and leaves it alone. The
//     validators are stored by the last step only, so a Commit cut short
//     leaves the feed to be fetched again. On a feed's first sight, every
//     step but the last marks the feed "first sight under way" (field
//     "fs" of its val hash or bucket) before it records items, and the
//     last step clears the mark: until then Diff keeps reporting the
//     feed as unknown, and the redo decides initial_items over the whole
//     feed again (the newest N are published; those a cut Commit already
//     queued are found recorded and not queued again).
const (
	stepItems = 2000
	stepBytes = 4 << 20
)

// span is one step: items [lo, hi).
type span struct{ lo, hi int }

// stepSpans cuts n items into steps of at most stepItems items and, where
// size is not nil, of at most stepBytes bytes (a step always holds at
// least one item). Zero items are one empty step, so that a call with
// nothing to record still stores its validators.
func stepSpans(n int, size func(i int) int) []span {
	if n == 0 {
		return []span{{0, 0}}
	}
	var out []span
	lo, bytes := 0, 0
	for i := range n {
		s := 0
		if size != nil {
			s = size(i)
		}
		if i > lo && (i-lo >= stepItems || bytes+s > stepBytes) {
			out = append(out, span{lo, i})
			lo, bytes = i, 0
		}
		bytes += s
	}
	return append(out, span{lo, n})
}

// stepHook is called after each step of a Diff or Commit that took more
// than one, with the number of steps done; tests use it to stop a long
// call between two steps.
type stepHook func(op string, done int)

// beforeStep returns the error that ends a call cut by its context before
// step i of n (i > 0: earlier steps are durable).
func beforeStep(ctx context.Context, op string, i, n int) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if i == 0 {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: stopped after step %d of %d (those steps are recorded; a redo records the rest): %w", op, i, n, err)
}

// size is about what a change weighs in a step.
func (c Change) size() int {
	return len(c.ExternalID) + len(c.Hash) + len(c.Type) + len(c.Data) + len(c.Tail) + 16
}
