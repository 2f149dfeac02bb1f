package publish_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// BenchmarkAcceptFirstSight is a first pass's Accept for one feed: 20 new
// items with 1.5 KB bodies, every repost matcher and the flood guard on
// (the defaults), against REDIS_URL. Nothing is delivered.
//
//	go test -run '^$' -bench AcceptFirstSight -benchmem ./publish/
func BenchmarkAcceptFirstSight(b *testing.B) {
	e := newBenchEnv(b)
	p := e.publisher(nil)
	o := publish.FeedOptions{InitialItems: 20, Reposts: publish.RepostOptions{
		URL: true, Text: true, Window: 720 * time.Hour, AcrossFeeds: true, MergeCategories: true, FloodMax: 25}}
	words := strings.Fields("the council met on tuesday to discuss a budget for roads schools parks and the new library " +
		"while residents asked about taxes water bills snow clearing bus routes and a plan for housing near the river")
	body := func(feed string, i int) string {
		var sb strings.Builder
		for w := 0; sb.Len() < 1500; w++ {
			if w%40 == 0 {
				sb.WriteString("<p>")
			}
			fmt.Fprintf(&sb, "%s%d ", words[(w*7+i)%len(words)], (w+i)%13)
			if w%40 == 39 {
				sb.WriteString("</p>")
			}
		}
		return sb.String() + feed
	}
	feed := func(n int) []transform.Payload {
		id := fmt.Sprintf("bench%d", n)
		items := stories(id, 20)
		for i := range items {
			items[i].Body = body(id, i)
			items[i].GUID = items[i].ExternalURL + "?guid"
		}
		return items
	}
	e.accept(p, "warm", feed(-1), o) // scripts loaded, connections dialled
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		items := feed(i)
		b.StartTimer()
		if _, err := p.Accept(context.Background(), fmt.Sprintf("bench%d", i), items, dedupe.Validators{ETag: `"1"`}, o); err != nil {
			b.Fatal(err)
		}
	}
}
