package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/config"
)

// TestCompileMappingsSharesEqualSettings: feeds with the same mapping
// settings share one compiled mapping (one compile, not one per feed), yet
// each maps items under its own feed id; different settings stay apart.
func TestCompileMappingsSharesEqualSettings(t *testing.T) {
	cfg := &config.Config{}
	short := 10
	for i := range 50 {
		f := config.Feed{ID: fmt.Sprintf("f%d", i)}
		if i%10 == 9 { // every tenth feed cuts titles at 10 characters
			f.Mapping.TitleMax = &short
		}
		cfg.Feeds = append(cfg.Feeds, f)
	}

	mc := newMappingCache(len(cfg.Feeds))
	for _, f := range cfg.Feeds {
		if _, err := mc.compile(f.ID, f.Mapping); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(mc.byKey); got != 2 {
		t.Fatalf("distinct compiled mappings = %d, want 2 (default and title_max 10)", got)
	}

	mappings, err := compileMappings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	feed := &gofeed.Feed{Items: []*gofeed.Item{{
		Title: "A title well over ten characters", Link: "https://example.test/a", GUID: "a",
		Description: "<p>body</p>",
	}}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range cfg.Feeds {
		res := mappings[f.ID].Map(feed, now)
		if len(res) != 1 || res[0].Payload == nil {
			t.Fatalf("feed %s: results %+v", f.ID, res)
		}
		p := res[0].Payload
		if p.FeedID != f.ID {
			t.Errorf("feed %s: payload of feed %q", f.ID, p.FeedID)
		}
		if cut := f.Mapping.TitleMax != nil; cut != (len([]rune(p.Title)) <= short) {
			t.Errorf("feed %s: title %q (title_max set: %v)", f.ID, p.Title, cut)
		}
	}
	a, b := mappings["f0"].Map(feed, now)[0].Payload, mappings["f1"].Map(feed, now)[0].Payload
	if a.ExternalID == b.ExternalID {
		t.Errorf("feeds f0 and f1 share the external id %q: ids must be namespaced by feed", a.ExternalID)
	}
}
