package history

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeByTime: batches recorded in any order of their times come out
// in time order, and updates of equal times in the order recorded.
func TestMergeByTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var items, all []Update
		seq := 0
		for range rng.IntN(12) {
			us := make([]Update, 1+rng.IntN(4))
			for i := range us {
				us[i] = Update{ID: string(rune('a' + seq%26)), Event: Event{At: int64(rng.IntN(6)), Count: seq}}
				seq++
			}
			all = append(all, us...)
			items = mergeByTime(items, us)
		}
		want := slices.Clone(all)
		slices.SortStableFunc(want, func(a, b Update) int { return int(a.Event.At - b.Event.At) })
		if !slices.EqualFunc(items, want, func(a, b Update) bool {
			return a.Event.At == b.Event.At && a.Event.Count == b.Event.Count && a.ID == b.ID
		}) {
			t.Fatalf("round %d:\n got %+v\nwant %+v", round, items, want)
		}
	}
}
