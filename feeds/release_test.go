package feeds

import (
	"testing"

	"github.com/mmcdole/gofeed/atom"
	jsonfeed "github.com/mmcdole/gofeed/json"
	"github.com/mmcdole/gofeed/rss"
)

func TestReleaseItems(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"rss": `<?xml version="1.0"?><rss version="2.0"><channel><title>T</title><ttl>90</ttl>
<item><title>a</title><guid>1</guid></item><item><title>b</title><guid>2</guid></item></channel></rss>`,
		"atom": `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><id>x</id>
<entry><title>a</title><id>1</id></entry><entry><title>b</title><id>2</id></entry></feed>`,
		"json": `{"version":"https://jsonfeed.org/version/1.1","title":"T","items":[{"id":"1","title":"a"},{"id":"2","title":"b"}]}`,
	}
	for name, doc := range docs {
		res, err := ParseDocument([]byte(doc), "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		hint := feedHint(res.Feed)
		if n := res.ItemCount(); n != 2 {
			t.Fatalf("%s: ItemCount %d before release, want 2", name, n)
		}
		res.ReleaseItems()
		res.ReleaseItems() // a second call keeps the count
		if n := res.ItemCount(); n != 2 {
			t.Errorf("%s: ItemCount %d after release, want 2", name, n)
		}
		if len(res.Feed.Items) != 0 || res.Feed.Title != "T" {
			t.Errorf("%s: after release %d items, title %q; want none and the title kept", name, len(res.Feed.Items), res.Feed.Title)
		}
		var orig int
		switch o := res.Feed.OriginalFeed().(type) {
		case *rss.Feed:
			orig = len(o.Items)
		case *atom.Feed:
			orig = len(o.Entries)
		case *jsonfeed.Feed:
			orig = len(o.Items)
		default:
			t.Fatalf("%s: original feed %T", name, o)
		}
		if orig != 0 {
			t.Errorf("%s: the original document still holds %d items", name, orig)
		}
		if got := feedHint(res.Feed); got != hint {
			t.Errorf("%s: feed hint %s after release, was %s", name, got, hint)
		}
	}
	var none *Result
	none.ReleaseItems()
	if none.ItemCount() != 0 || (&Result{}).ItemCount() != 0 {
		t.Error("a result without a feed counts items")
	}
}
