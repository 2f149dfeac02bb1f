package feeds

import (
	"github.com/mmcdole/gofeed/atom"
	jsonfeed "github.com/mmcdole/gofeed/json"
	"github.com/mmcdole/gofeed/rss"
)

// ReleaseItems drops the parsed items of Feed, and those of the original
// RSS, Atom or JSON document gofeed keeps beside it, once the Handler has
// mapped them: a huge document's tree (a few hundred bytes of XML per item
// become kilobytes of heap, twice) is otherwise kept alive, and scanned at
// every GC, while its items are recorded. The feed-level fields stay, and
// ItemCount still reports how many items there were.
func (r *Result) ReleaseItems() {
	if r == nil || r.Feed == nil || r.itemsReleased {
		return
	}
	r.itemCount, r.itemsReleased = len(r.Feed.Items), true
	r.Feed.Items = nil
	switch o := r.Feed.OriginalFeed().(type) {
	case *rss.Feed:
		o.Items = nil
	case *atom.Feed:
		o.Entries = nil
	case *jsonfeed.Feed:
		o.Items = nil
	}
}

// ItemCount is the number of items of the parsed document, released or not.
func (r *Result) ItemCount() int {
	switch {
	case r == nil || r.Feed == nil:
		return 0
	case r.itemsReleased:
		return r.itemCount
	}
	return len(r.Feed.Items)
}
