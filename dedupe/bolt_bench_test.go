package dedupe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
)

// BenchmarkBoltLifecycle is an item's life in the embedded store as a
// first pass lives it: a feed's 20 new items committed, claimed and
// settled as delivered, in a write each, the settles together as the
// publisher hands them over (ns/op and allocs/op are per feed). The payloads are random text of a story's size, so that their
// compression costs what a real one does. Each commit waits on its fsync,
// so the time depends on the disk; the allocations do not.
//
//	go test -run '^$' -bench BoltLifecycle -benchmem ./dedupe/
func BenchmarkBoltLifecycle(b *testing.B) {
	ctx := context.Background()
	s, err := dedupe.OpenBolt(filepath.Join(b.TempDir(), "store.db"), dedupe.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const items = 20
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"council", "budget", "roads", "schools", "parks", "library", "residents", "taxes", "water", "housing"}
	payload := func() []byte {
		var p []byte
		for len(p) < 2800 {
			p = append(p, words[rng.IntN(len(words))]...)
			p = append(p, ' ')
		}
		return p
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		feed := fmt.Sprint("feed", n)
		changes := make([]dedupe.Change, items)
		for i := range changes {
			changes[i] = dedupe.Change{ExternalID: fmt.Sprint("item", i), Hash: fmt.Sprint("h", i), Type: "story", Action: dedupe.ActionPublish, Data: payload()}
		}
		b.StartTimer()
		if _, err := s.Commit(ctx, feed, changes, &dedupe.Validators{ETag: `"1"`}, now); err != nil {
			b.Fatal(err)
		}
		claimed, _, err := s.Claim(ctx, "bench", items, time.Minute, now)
		if err != nil {
			b.Fatal(err)
		}
		if len(claimed) != items {
			b.Fatalf("claimed %d of %d", len(claimed), items)
		}
		ops := make([]dedupe.ClaimOp, len(claimed))
		for i, c := range claimed {
			ops[i] = dedupe.ClaimOp{Key: c.Key, Owner: "bench", Settle: &dedupe.Settlement{
				Kind: dedupe.Delivered, ContentID: int64(n*items + i + 1), Type: "story", Hash: c.Hash}}
		}
		for i, r := range s.ClaimOps(ctx, ops, now) {
			if r.Err != nil || !r.Held {
				b.Fatalf("settle %s: held %v, %v", ops[i].Key, r.Held, r.Err)
			}
		}
	}
}
