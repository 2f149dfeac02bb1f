package publish_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
	"github.com/feedworker/feedworker/transform"
)

// BenchmarkRoundTrips reports what the hot paths cost in Redis round trips
// (counted by a go-redis hook): a poll with nothing new (target 1), and a
// new item, split into its share of the poll that accepted it and its
// delivery (claim and record; the claim is batched across idle workers).
//
//	go test -run '^$' -bench RoundTrips ./publish/
func BenchmarkRoundTrips(b *testing.B) {
	b.Run("poll-unchanged", func(b *testing.B) {
		e := newBenchEnv(b)
		p := e.publisher(nil)
		items := stories("bench", 50)
		e.accept(p, "bench", items, publish.FeedOptions{InitialItems: 100})
		if err := p.Drain(context.Background()); err != nil {
			b.Fatal(err)
		}
		e.accept(p, "bench", items, publish.FeedOptions{InitialItems: 100}) // warm the script cache
		start := e.rt.Count()
		b.ResetTimer()
		for range b.N {
			e.accept(p, "bench", items, publish.FeedOptions{InitialItems: 100})
		}
		b.StopTimer()
		b.ReportMetric(float64(e.rt.Count()-start)/float64(b.N), "roundtrips/poll")
	})
	b.Run("new-item", func(b *testing.B) {
		const perPoll = 10
		e := newBenchEnv(b)
		p := e.publisher(nil)
		var feedItems []transform.Payload
		// Warm up: scripts loaded, connections dialled, categories none.
		feedItems = append(feedItems, stories("warm", perPoll)...)
		e.accept(p, "bench", feedItems, publish.FeedOptions{InitialItems: 100})
		if err := p.Drain(context.Background()); err != nil {
			b.Fatal(err)
		}
		var accept, deliver int64
		b.ResetTimer()
		for i := range b.N {
			for j := range perPoll {
				feedItems = append(feedItems, story("bench", i*perPoll+j, fmt.Sprint("bench item ", i, j), day0))
			}
			// A feed keeps its newest items; the rest age out of the fetch.
			if len(feedItems) > 50 {
				feedItems = feedItems[len(feedItems)-50:]
			}
			n := e.rt.Count()
			e.accept(p, "bench", feedItems, publish.FeedOptions{InitialItems: 100})
			m := e.rt.Count()
			if err := p.Drain(context.Background()); err != nil {
				b.Fatal(err)
			}
			accept += m - n
			deliver += e.rt.Count() - m
		}
		b.StopTimer()
		items := float64(b.N * perPoll)
		b.ReportMetric(float64(accept)/items, "accept-roundtrips/item")
		b.ReportMetric(float64(deliver)/items, "deliver-roundtrips/item")
		b.ReportMetric(float64(accept+deliver)/items, "roundtrips/item")
	})
}

func newBenchEnv(b *testing.B) *env {
	b.Helper()
	return newEnv(b, onRedis, sandbox.Faults{})
}
