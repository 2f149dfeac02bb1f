package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
)

// externalID namespaces an item key by the feed id and shortens it to a
// fixed length. 20 hex digits are 80 bits: no collision among the items of
// a feed in practice, short enough for the API's id fields.
func externalID(feedID, key string) string {
	sum := sha256.Sum256([]byte(feedID + "\x00" + key))
	return "fw1-" + hex.EncodeToString(sum[:10])
}

// itemKeys are the candidate identities of one item, each "" when the
// item lacks it.
type itemKeys struct {
	guid  string // "guid:" + GUID as written (trimmed): the publisher's promise
	link  string // "link:" + identity link (see identityLink)
	title string // "title:" + raw title + NUL + date
}

// keysFor computes an item's candidate keys. The title key uses the raw
// title, so it does not move when the mapping's text rules change.
func keysFor(item *gofeed.Item, idLink string) itemKeys {
	var k itemKeys
	if g := strings.TrimSpace(item.GUID); g != "" {
		k.guid = "guid:" + g
	}
	if idLink != "" {
		k.link = "link:" + idLink
	}
	date := ""
	if t := itemDate(item.PublishedParsed, item.UpdatedParsed, item.Published, item.Updated); !t.IsZero() {
		date = t.Format(time.RFC3339)
	} else {
		date = strings.TrimSpace(item.Published + item.Updated)
	}
	title := strings.TrimSpace(item.Title)
	if title == "" && date == "" {
		// Nothing names the item: its text is all there is. Such items
		// (RSS allows a description alone) change id when edited.
		title = strings.TrimSpace(item.Description + "\x00" + item.Content)
	}
	k.title = "title:" + title + "\x00" + date
	return k
}

// assignKeys picks the identity key of every item of one fetch, in the
// order GUID, link, title and date, where a GUID or link shared by several
// items does not identify any of them:
//
//   - one GUID on several items means the feed's GUIDs cannot be trusted:
//     no item of the feed uses its GUID, and warning says so;
//   - one link on several items (a podcast whose items all link to the show
//     page) is not an item's link: those items use title and date.
//
// Items that still share a key are the same item repeated; Map skips all
// but the first.
func assignKeys(keys []itemKeys) (out []string, warning string) {
	guids := make(map[string]int, len(keys))
	for _, k := range keys {
		if k.guid != "" {
			guids[k.guid]++
		}
	}
	for _, k := range keys {
		if n := guids[k.guid]; n > 1 {
			warning = fmt.Sprintf("feed uses GUID %q for %d items in one fetch: its external ids come from item links instead",
				strings.TrimPrefix(k.guid, "guid:"), n)
			break
		}
	}
	out = make([]string, len(keys))
	links := make(map[string]int, len(keys))
	for i, k := range keys {
		if k.guid != "" && warning == "" {
			out[i] = k.guid
		} else if k.link != "" {
			links[k.link]++
		}
	}
	for i, k := range keys {
		switch {
		case out[i] != "":
		case k.link != "" && links[k.link] == 1:
			out[i] = k.link
		default:
			out[i] = k.title
		}
	}
	return out, warning
}
