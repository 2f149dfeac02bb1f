package dedupe_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// claimBatch is how many items one claim takes, as the publisher's senders
// do (a batch at a time).
const claimBatch = 100

// payload is an item's outbox data, about the size of a story's request.
var payload = []byte(strings.Repeat("x", 2048))

// BenchmarkOutboxClaimAck weighs the outbox's claim and settle scripts
// against Redis Streams consumer groups (XADD, XREADGROUP, XACK + XDEL) for
// the same work on a real Redis: items spread over 16 partitions, claimed
// claimBatch at a time, each partition in turn, and acknowledged as
// delivered. Only the claim and the acknowledgement are timed (ns/op is per
// item); enqueueing is not, since Commit also records the items, which XADD
// does not. Streams give no per-item due time or backoff, no replacement of
// a queued item by a newer version, no dead letters and no pending mark, so
// they win only if they are much faster at this part.
func BenchmarkOutboxClaimAck(b *testing.B) {
	ctx := context.Background()
	// feeds[p] is a feed id in partition p, so that each batch spreads its
	// items over every partition.
	feeds := make([]string, dedupe.DefaultPartitions)
	layout := dedupe.NewRedis(nil, dedupe.RedisOptions{})
	for i, left := 0, len(feeds); left > 0; i++ {
		id := fmt.Sprint("feed", i)
		if p := layout.PartitionOf(id); feeds[p] == "" {
			feeds[p] = id
			left--
		}
	}
	b.Run("scripts", func(b *testing.B) {
		c, prefix := dedupetest.Redis(b)
		rt := &dedupe.RoundTripCounter{}
		c.AddHook(rt)
		s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var trips int64
		b.ResetTimer()
		for done := 0; done < b.N; {
			n := min(claimBatch, b.N-done)
			b.StopTimer()
			per := make([][]dedupe.Change, len(feeds))
			for i := range n {
				p := i % len(feeds)
				per[p] = append(per[p], dedupe.Change{ExternalID: fmt.Sprint("i", done+i), Hash: "h", Type: "story", Action: dedupe.ActionPublish, Data: payload})
			}
			for p, ch := range per {
				if len(ch) > 0 {
					if _, err := s.Commit(ctx, feeds[p], ch, nil, now); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StartTimer()
			before := rt.Count()
			var ops []dedupe.SettleOp
			for len(ops) < n {
				got, _, err := s.Claim(ctx, "w", n-len(ops), time.Minute, now)
				if err != nil {
					b.Fatal(err)
				}
				for _, cl := range got {
					ops = append(ops, dedupe.SettleOp{Key: cl.Key, Settlement: dedupe.Settlement{Kind: dedupe.Delivered, ContentID: 1, Type: "story", Hash: cl.Hash}})
				}
			}
			_, errs := s.SettleMany(ctx, "w", ops, now)
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			trips += rt.Count() - before
			done += n
		}
		b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/item")
	})
	b.Run("streams", func(b *testing.B) {
		c, prefix := dedupetest.Redis(b)
		rt := &dedupe.RoundTripCounter{}
		c.AddHook(rt)
		s := dedupe.NewRedis(c, dedupe.RedisOptions{Prefix: prefix})
		streams := make([]string, len(feeds))
		for p := range streams {
			// In the partition's hash tag, so that it is Cluster-legal
			// next to the partition's other keys.
			streams[p] = s.PartitionTag(p) + "stream"
			if err := c.XGroupCreateMkStream(ctx, streams[p], "g", "0").Err(); err != nil {
				b.Fatal(err)
			}
		}
		var trips int64
		b.ResetTimer()
		for done := 0; done < b.N; {
			n := min(claimBatch, b.N-done)
			b.StopTimer()
			pipe := c.Pipeline()
			for i := range n {
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: streams[i%len(streams)], Values: []any{"m", fmt.Sprint("i", done+i), "d", payload}})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			before := rt.Count()
			for got := 0; got < n; {
				// Every partition in one pipeline (one stream per
				// XREADGROUP: streams of different slots cannot share one
				// on a Cluster), then every acknowledgement in another.
				read := c.Pipeline()
				cmds := make([]*redis.XStreamSliceCmd, len(streams))
				for p, st := range streams {
					cmds[p] = read.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "w", Streams: []string{st, ">"}, Count: int64(n - got), Block: -1})
				}
				if _, err := read.Exec(ctx); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
				ack := c.Pipeline()
				for _, cmd := range cmds {
					res, err := cmd.Result()
					if err == redis.Nil {
						continue
					}
					if err != nil {
						b.Fatal(err)
					}
					for _, xs := range res {
						ids := make([]string, len(xs.Messages))
						for i, m := range xs.Messages {
							ids[i] = m.ID
						}
						if len(ids) == 0 {
							continue
						}
						ack.XAck(ctx, xs.Stream, "g", ids...)
						ack.XDel(ctx, xs.Stream, ids...)
						got += len(ids)
					}
				}
				if _, err := ack.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			trips += rt.Count() - before
			done += n
		}
		b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/item")
	})
}
