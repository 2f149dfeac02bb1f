package transform

import (
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

// TestMapSpansCovers checks that every index is handed to exactly one
// span, on both sides of parallelMin.
func TestMapSpansCovers(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, parallelMin - 1, parallelMin, 3*parallelMin + 7} {
		hits := make([]atomic.Int32, n)
		mapSpans(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Fatalf("n=%d: index %d mapped %d times", n, i, h)
			}
		}
	}
}

// TestMapSpansPanic checks that a panic in a span reaches the caller's
// goroutine, where the worker recovers from a feed's panic.
func TestMapSpansPanic(t *testing.T) {
	t.Parallel()
	defer func() {
		r := recover()
		if r == nil || !strings.HasPrefix(fmt.Sprint(r), "boom at") || strings.Contains(fmt.Sprint(r), "goroutine") {
			t.Fatalf("recovered %v, want the span's panic, without its stack (it becomes the poll's error)", r)
		}
		s, ok := r.(interface{ Stack() []byte })
		if !ok || !strings.Contains(string(s.Stack()), "TestMapSpansPanic") {
			t.Fatalf("recovered %#v; want the span's own stack for the log", r)
		}
	}()
	mapSpans(4*parallelMin, func(lo, hi int) {
		if lo > 0 {
			panic(fmt.Sprintf("boom at %d", lo))
		}
	})
	t.Fatal("mapSpans returned after a panic")
}

// TestMapLargeFeed maps a feed above parallelMin (spans mapped at once,
// with duplicates and nil items among them) and checks each result
// against the item mapped alone, in order, as the one-goroutine path does.
func TestMapLargeFeed(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "f", nil)
	n := parallelMin + 999
	items := make([]*gofeed.Item, n)
	for i := range items {
		switch {
		case i%997 == 5:
			continue // nil
		case i%101 == 3:
			items[i] = &gofeed.Item{GUID: "dup", Title: "a repeated guid"}
		default:
			items[i] = &gofeed.Item{GUID: fmt.Sprintf("g%d", i), Title: fmt.Sprintf("Item %d", i),
				Link: fmt.Sprintf("https://example.com/p/%d", i), Description: fmt.Sprintf("<p>Body <b>%d</b> <img src=\"/i/%d.png\"></p>", i, i),
				PublishedParsed: ptr(testNow.Add(-time.Duration(i) * time.Minute))}
		}
	}
	feed := &gofeed.Feed{Link: "https://example.com/", Items: items}
	got := m.Map(feed, testNow)
	if len(got) != n {
		t.Fatalf("%d results, want %d", len(got), n)
	}
	// What the loop over one goroutine gives: the same identity pass,
	// then every item mapped in order with one zone cache.
	links := make([]string, n)
	cand := make([]itemKeys, n)
	base := parseBase(feed.Link)
	for i, item := range items {
		if item != nil {
			raw := itemLink(item, base)
			links[i] = canonicalLink(raw, base)
			cand[i] = keysFor(item, identityLink(raw, base))
		}
	}
	keys, warning := assignKeys(cand)
	seen := map[string]bool{}
	zones := map[string]*time.Location{}
	var payloads, skips int
	for i, item := range items {
		var want Result
		want.Warning = warning
		id := ""
		if item != nil {
			id = externalID(m.feedID, keys[i])
		}
		switch {
		case item == nil:
			want.Skip = "empty: nil item"
		case seen[id]:
			want = got[i] // the duplicate's message names the first index
			if !strings.HasPrefix(want.Skip, "duplicate:") {
				t.Fatalf("item %d: %+v, want a duplicate skip", i, got[i])
			}
		default:
			seen[id] = true
			m.mapItem(&want, feed, item, id, links[i], base, testNow.UTC(), zones, nil, newScratch(m.sanitizer))
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("item %d:\n got %+v\nwant %+v", i, got[i], want)
		}
		if got[i].Payload != nil {
			payloads++
		} else {
			skips++
		}
	}
	if payloads < n/2 || skips == 0 {
		t.Fatalf("%d payloads, %d skips: the feed does not exercise both", payloads, skips)
	}
}
