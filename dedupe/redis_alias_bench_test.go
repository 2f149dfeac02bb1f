package dedupe_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/internal/cputime"
)

// BenchmarkRedisCommitAliases is a first sight's commit of 20 new items
// with the aliases a fetch leaves (six of the feed's own per item: two
// links, four text bands): "apart" commits and then puts them (the Redis
// store before CommitAliases), "with-commit" has the commit's script set
// them. cpu-ns/op is this process's CPU (the client's), Redis's own not
// included.
//
//	go test -run '^$' -bench RedisCommitAliases ./dedupe/
func BenchmarkRedisCommitAliases(b *testing.B) {
	c, prefix := dedupetest.Redis(b)
	s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
	data := []byte(strings.Repeat("x", 3000))
	batch := func(n int) (string, []dedupe.Change, []dedupe.Alias) {
		feed := fmt.Sprint("feed", n)
		var ch []dedupe.Change
		var as []dedupe.Alias
		for i := range 20 {
			ext := fmt.Sprint("item", i)
			ch = append(ch, dedupe.Change{ExternalID: ext, Hash: "h", Type: "story", Action: dedupe.ActionPublish, Data: data})
			for j := range 6 {
				as = append(as, dedupe.Alias{AliasFP: dedupe.AliasFP{FeedID: feed, FP: fmt.Sprintf("u:%d-%d-abcdefghijklmnop", i, j)},
					Target: dedupe.Key{FeedID: feed, ExternalID: ext}, Type: "story", Extra: "item title of a few words"})
			}
		}
		return feed, ch, as
	}
	for _, mode := range []string{"apart", "with-commit"} {
		b.Run(mode, func(b *testing.B) {
			ctx, now := b.Context(), time.Now()
			n, cpu0 := 0, cputime.Self()
			for b.Loop() {
				n++
				feed, ch, as := batch(n)
				if mode == "apart" {
					if _, err := s.Commit(ctx, feed, ch, &dedupe.Validators{ETag: "e"}, now); err != nil {
						b.Fatal(err)
					}
					if err := s.PutAliases(ctx, as, now); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := s.CommitAliases(ctx, feed, ch, &dedupe.Validators{ETag: "e"}, as, nil, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Self()-cpu0)/float64(n), "cpu-ns/op")
		})
	}
}
