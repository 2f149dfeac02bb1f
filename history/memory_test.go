package history_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
	"github.com/feedworker/feedworker/history"
)

// fullFeed is a feed's history at its default bound, with items and polls
// of realistic sizes: a 70-character title, a 90-character link, a GUID,
// field digests and the usual fates (queued, published, seen unchanged
// many times), and polls with both validators.
func fullFeed(feed string) []history.Batch {
	var out []history.Batch
	for p := range history.DefaultItems {
		at := ms(time.Duration(p) * 15 * time.Minute)
		id := fmt.Sprintf("%s-%016x", feed, p*7919)
		var dg history.Digest
		for f := history.FieldType; f <= history.FieldNeed; f++ {
			dg.Set(f, uint32(p*7919+int(f)))
		}
		up := history.Update{
			ID: id, Title: strings.Repeat("T", 70), GUID: "https://example.com/?p=" + fmt.Sprint(100000+p),
			Link: "https://example.com/2026/11/25/" + strings.Repeat("s", 60), Seen: true, Digest: dg,
			Event: history.Event{Kind: history.Queued, At: at},
		}
		b := history.Batch{Feed: feed,
			Polls: []history.Poll{{At: at, Result: "ok", StatusCode: 200, DurationMS: 180, Bytes: 48213, Items: 20, New: 1, Unchanged: 19,
				ETag: `W/"5f3c-1a2b3c4d5e6f"`, LastModified: "Tue, 25 Nov 2026 10:00:00 GMT"}},
			Items: []history.Update{up,
				{ID: id, Event: history.Event{Kind: history.Published, At: at + 900, ContentID: int64(100000 + p)}},
				{ID: id, Seen: true, Digest: dg, Event: history.Event{Kind: history.Unchanged, At: at + 60000}},
				{ID: id, Seen: true, Digest: dg, Event: history.Event{Kind: history.Unchanged, At: at + 120000}},
			}}
		out = append(out, b)
	}
	return out
}

// TestMemoryPerFeed measures what a feed's full history costs: in Redis
// with MEMORY USAGE over its three keys, in bbolt with the pages of its
// buckets. The figures are logged (go test -v -run MemoryPerFeed) and the
// test fails if they grow past a budget of 256 KiB per feed.
func TestMemoryPerFeed(t *testing.T) {
	t.Parallel()
	const budget = 256 << 10
	t.Run("redis", func(t *testing.T) {
		c, prefix := dedupetest.Redis(t)
		s := history.NewRedis(c, prefix, history.Limits{})
		ctx := t.Context()
		for _, b := range fullFeed("news") {
			if err := s.Write(ctx, []history.Batch{b}, nil, -1, t0); err != nil {
				t.Fatal(err)
			}
		}
		var total int64
		for _, k := range s.Keys("news") {
			n, err := c.MemoryUsage(ctx, k, 0).Result()
			if err != nil {
				t.Fatalf("MEMORY USAGE %s: %v", k, err)
			}
			t.Logf("%s: %d bytes", k[len(prefix):], n)
			total += n
		}
		t.Logf("redis: %d bytes per feed at %d items and %d polls (%.0f bytes per item+poll)", total, history.DefaultItems, history.DefaultItems, float64(total)/history.DefaultItems)
		if total > budget {
			t.Errorf("redis history of one feed takes %d bytes, over the %d budget", total, budget)
		}
	})
	t.Run("bolt", func(t *testing.T) {
		s := history.NewBolt(openBolt(t), history.Limits{})
		ctx := t.Context()
		for _, b := range fullFeed("news") {
			if err := s.Write(ctx, []history.Batch{b}, nil, -1, t0); err != nil {
				t.Fatal(err)
			}
		}
		n, alloc, err := s.Size("news")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("bolt: %d bytes in use (%d bytes of pages allocated) per feed at %d items and %d polls", n, alloc, history.DefaultItems, history.DefaultItems)
		if n > budget {
			t.Errorf("bolt history of one feed takes %d bytes, over the %d budget", n, budget)
		}
	})
}
