package feeds

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mmcdole/gofeed"
)

// jsonItem wraps one item's JSON in a JSON Feed 1.1 document.
func jsonItem(item string) []byte {
	return []byte(`{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[` + item + `]}`)
}

// TestJSONFeedCoercion covers each coercion of a wrongly typed field: the
// field is coerced or dropped and the rest of the item and feed stand.
func TestJSONFeedCoercion(t *testing.T) {
	t.Parallel()
	type got struct {
		ID, Title, Link, Content, Published string
		Tags                                []string
		Authors                             []string
		Enclosures                          []string
	}
	view := func(it *gofeed.Item) got {
		g := got{ID: it.GUID, Title: it.Title, Link: it.Link, Content: it.Content, Published: it.Published, Tags: it.Categories}
		for _, a := range it.Authors {
			g.Authors = append(g.Authors, a.Name)
		}
		for _, e := range it.Enclosures {
			g.Enclosures = append(g.Enclosures, e.URL+" "+e.Type+" "+e.Length)
		}
		return g
	}
	tests := []struct {
		name string
		item string
		want got
	}{
		{"well typed", `{"id":"1","title":"T","url":"https://e.com/1","content_html":"<p>x</p>","tags":["a","b"]}`,
			got{ID: "1", Title: "T", Link: "https://e.com/1", Content: "<p>x</p>", Tags: []string{"a", "b"}}},
		{"tags as a string", `{"id":"1","title":"T","tags":"politics"}`,
			got{ID: "1", Title: "T", Tags: []string{"politics"}}},
		{"tags as a comma-separated string", `{"id":"1","tags":"a, b ,c"}`,
			got{ID: "1", Tags: []string{"a", "b", "c"}}},
		{"tags with numbers, nulls and nested lists", `{"id":"1","tags":["a",2,null,["x"],true,""]}`,
			got{ID: "1", Tags: []string{"a", "2", "true"}}},
		{"tags as an object", `{"id":"1","title":"T","tags":{"a":1}}`,
			got{ID: "1", Title: "T"}},
		{"tags null", `{"id":"1","tags":null}`, got{ID: "1"}},
		{"id as a number", `{"id":12345678901234567890,"title":"T"}`,
			got{ID: "12345678901234567890", Title: "T"}},
		{"id as a float", `{"id":1.5}`, got{ID: "1.5"}},
		{"title as a number", `{"id":"1","title":2024}`, got{ID: "1", Title: "2024"}},
		{"title as a boolean", `{"id":"1","title":false}`, got{ID: "1", Title: "false"}},
		{"title as an object", `{"id":"1","title":{"text":"T"},"url":"https://e.com/1"}`,
			got{ID: "1", Link: "https://e.com/1"}},
		{"title as a list", `{"id":"1","title":["T",""]}`, got{ID: "1", Title: "T"}},
		{"null everywhere", `{"id":null,"title":null,"url":null,"content_html":null,"tags":null,"author":null,"authors":null,"attachments":null,"date_published":null}`,
			got{}},
		{"content as a number", `{"id":"1","content_text":42}`, got{ID: "1", Content: "42"}},
		{"author as a name", `{"id":"1","author":"Ann"}`, got{ID: "1", Authors: []string{"Ann"}}},
		{"author as a list", `{"id":"1","author":[{"name":"Ann"}]}`, got{ID: "1", Authors: []string{"Ann"}}},
		{"authors as an object", `{"id":"1","authors":{"name":"Bo"}}`, got{ID: "1", Authors: []string{"Bo"}}},
		{"authors with names and junk", `{"id":"1","authors":["Ann",{"name":"Bo","url":7},null,3]}`,
			got{ID: "1", Authors: []string{"Ann", "Bo", "3"}}},
		{"attachments as an object", `{"id":"1","attachments":{"url":"https://e.com/a.mp3","mime_type":"audio/mpeg","size_in_bytes":"1234"}}`,
			got{ID: "1", Enclosures: []string{"https://e.com/a.mp3 audio/mpeg 1234"}}},
		{"attachment size as a float and a bad duration", `{"id":"1","attachments":[{"url":"https://e.com/a.mp3","mime_type":"audio/mpeg","size_in_bytes":12.7,"duration_in_seconds":"long"}]}`,
			got{ID: "1", Enclosures: []string{"https://e.com/a.mp3 audio/mpeg 12"}}},
		{"attachment as a bare url", `{"id":"1","attachments":["https://e.com/a.mp3"]}`,
			got{ID: "1", Enclosures: []string{"https://e.com/a.mp3  "}}},
		{"date as a number is kept as text", `{"id":"1","date_published":2024}`, got{ID: "1", Published: "2024"}},
		{"extension fields are ignored", `{"id":"1","_custom":{"deep":[1,2]},"title":"T"}`, got{ID: "1", Title: "T"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, err := Parse(jsonItem(tt.item), "application/feed+json")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(feed.Items) != 1 {
				t.Fatalf("got %d items, want 1", len(feed.Items))
			}
			g := view(feed.Items[0])
			for i, e := range g.Enclosures {
				g.Enclosures[i] = strings.TrimRight(e, " ")
			}
			want := tt.want
			for i, e := range want.Enclosures {
				want.Enclosures[i] = strings.TrimRight(e, " ")
			}
			if d := cmp.Diff(want, g); d != "" {
				t.Errorf("item (-want +got):\n%s", d)
			}
		})
	}
}

// TestJSONFeedDocuments covers the feed level: versions, almost-JSON-Feed
// documents, wrongly typed feed fields, items that are not objects.
func TestJSONFeedDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		doc       string
		wantTitle string
		wantItems int
	}{
		{"version 1.0 with author", `{"version":"https://jsonfeed.org/version/1","title":"v1","author":{"name":"A"},"items":[{"id":"1"}]}`, "v1", 1},
		{"version 1.1 with authors", `{"version":"https://jsonfeed.org/version/1.1","title":"v11","authors":[{"name":"A"}],"items":[{"id":"1"},{"id":"2"}]}`, "v11", 2},
		{"no version, items present", `{"title":"almost","items":[{"id":"1","title":"x"}]}`, "almost", 1},
		{"version not a jsonfeed url, items present", `{"version":"1.0","title":"odd","items":[{"id":"1"}]}`, "odd", 1},
		{"version as a number", `{"version":1,"title":"n","items":[]}`, "n", 0},
		{"items null", `{"version":"https://jsonfeed.org/version/1.1","title":"n","items":null}`, "n", 0},
		{"items missing", `{"version":"https://jsonfeed.org/version/1.1","title":"n"}`, "n", 0},
		{"items as one object", `{"version":"https://jsonfeed.org/version/1.1","title":"o","items":{"id":"1"}}`, "o", 1},
		{"items that are not objects are dropped", `{"version":"https://jsonfeed.org/version/1.1","title":"d","items":[1,"x",null,{"id":"1"},[]]}`, "d", 1},
		{"expired as a string and hubs as an object", `{"version":"https://jsonfeed.org/version/1.1","title":"e","expired":"true","hubs":{"type":"WebSub","url":"https://h"},"items":[{"id":"1"}]}`, "e", 1},
		{"title as a number", `{"version":"https://jsonfeed.org/version/1.1","title":7,"items":[{"id":"1"}]}`, "7", 1},
		{"author as a string", `{"version":"https://jsonfeed.org/version/1","title":"a","author":"Ann","items":[{"id":"1"}]}`, "a", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			feed, err := Parse([]byte(tt.doc), "application/json")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if feed.FeedType != "json" || feed.Title != tt.wantTitle || len(feed.Items) != tt.wantItems {
				t.Errorf("got type %q title %q, %d items; want json %q, %d items", feed.FeedType, feed.Title, len(feed.Items), tt.wantTitle, tt.wantItems)
			}
		})
	}
}

// TestJSONFeedOneBadFieldKeepsTheFeed is the report that started this: a
// feed of 84 items, one of which has tags as a string.
func TestJSONFeedOneBadFieldKeepsTheFeed(t *testing.T) {
	t.Parallel()
	var items []string
	for i := range 84 {
		tags := `["a"]`
		if i == 41 {
			tags = `"a"`
		}
		items = append(items, `{"id":"`+strings.Repeat("x", i+1)+`","title":"item","tags":`+tags+`}`)
	}
	doc := `{"version":"https://jsonfeed.org/version/1.1","title":"big","items":[` + strings.Join(items, ",") + `]}`
	feed, err := Parse([]byte(doc), "application/feed+json")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(feed.Items) != 84 {
		t.Fatalf("got %d items, want 84", len(feed.Items))
	}
	if got := feed.Items[41].Categories; len(got) != 1 || got[0] != "a" {
		t.Errorf("item 42 tags = %q, want [a]", got)
	}
}

func TestJSONNotAFeed(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{"error":"not found"}`, `{"rss":{"channel":{}}}`} {
		if _, err := Parse([]byte(doc), "application/json"); err == nil || !strings.Contains(err.Error(), "not a JSON Feed") {
			t.Errorf("Parse(%s) = %v, want an error saying it is not a JSON Feed", doc, err)
		}
	}
}
