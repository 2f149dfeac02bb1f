package publish_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/sandbox"
)

// TestUpdateClearsDroppedFields: the source drops an item's image, summary
// and categories; after the PUT the service has none of them either.
func TestUpdateClearsDroppedFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onRedis, sandbox.Faults{})
	ctx := context.Background()
	news, _, err := e.acs.Categories.Create(ctx, &acs.CategoryCreate{Description: "News"})
	if err != nil {
		t.Fatal(err)
	}
	p := e.publisher(nil)
	items := stories("edit", 1)
	items[0].ImageURL = "https://example.com/cover.png"
	items[0].CategoryIDs = []int64{news.ID}
	items[0] = rehash(items[0])
	e.accept(p, "edit", items, publish.FeedOptions{InitialItems: 10})
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	fields := func() map[string]any {
		t.Helper()
		got := e.sb.ItemsByExternalID(items[0].ExternalID)
		if len(got) != 1 {
			t.Fatalf("%d copies on the service; want 1", len(got))
		}
		var m map[string]any
		if err := json.Unmarshal(got[0].JSON, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := fields()
	if before["image_url"] != items[0].ImageURL || len(asList(before["categories"])) != 1 || before["summary"] == "" {
		t.Fatalf("published %v; want the image, a summary and one category", before)
	}

	// The source edits the item: no image, no summary, no categories.
	items[0].ImageURL, items[0].Summary, items[0].CategoryIDs = "", "", nil
	items[0] = rehash(items[0])
	if c := e.accept(p, "edit", items, publish.FeedOptions{InitialItems: 10}); c.Updated != 1 {
		t.Fatalf("counts %+v; want 1 updated", c)
	}
	if err := p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	after := fields()
	for _, f := range []string{"image_url", "summary"} {
		if v, ok := after[f]; ok && v != "" {
			t.Errorf("%s = %v after the source dropped it; want no value", f, v)
		}
	}
	if cats := asList(after["categories"]); len(cats) != 0 {
		t.Errorf("categories = %v after the source dropped them; want none", cats)
	}
	if after["title"] != items[0].Title {
		t.Errorf("title = %v; want %q", after["title"], items[0].Title)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
