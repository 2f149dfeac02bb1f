package worker

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/feedworker/feedworker/transform"
)

// digestBefore is digest as first written (json.Marshal per value). The
// history compares digests across versions, so they must not change.
func digestBefore(pl *transform.Payload) map[string]string {
	h := func(vs ...any) string {
		f := fnv.New32a()
		for _, v := range vs {
			b, _ := json.Marshal(v)
			f.Write(b)
			f.Write([]byte{0})
		}
		return fmt.Sprintf("%06x", f.Sum32()&0xffffff)
	}
	return map[string]string{
		"type": h(pl.Type), "title": h(pl.Title), "summary": h(pl.Summary), "body": h(pl.Body), "image": h(pl.ImageURL),
		"link": h(pl.ExternalURL, pl.MoreButtonText), "dates": h(pl.PublishDate, pl.ExpirationDate, pl.PriorityUntil),
		"categories": h(pl.CategoryIDs, pl.CategoryNames),
		"settings": h(pl.AuthorID, pl.PriorityID, pl.StatusID, pl.Segments, pl.Private, pl.ExclusiveToSegment,
			pl.AvailableInPartner, pl.EnableComments, pl.EnableLinkTracking, pl.Evergreen),
		"event": h(pl.Event), "need": h(pl.Need),
	}
}

func TestDigestUnchanged(t *testing.T) {
	allDay := true
	pls := []*transform.Payload{
		{},
		{Type: "story", Title: "Fish & <chips>\n", Summary: "line\nbreak \u2028 \"quoted\"", Body: "<p>a &amp; b</p>\n<img src=\"x\">",
			ImageURL: "https://example.org/i.jpg?a=1&b=2", ExternalURL: "https://example.org/a", MoreButtonText: "Read more",
			PublishDate: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), CategoryIDs: []int64{3, 1}, CategoryNames: []string{"Local"},
			Segments: []int64{7}, Event: &transform.Event{Start: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), AllDay: &allDay, City: "Ghent"}},
	}
	for i, pl := range pls {
		got, want := digest(pl).Map(), digestBefore(pl)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("payload %d: digest %v, was %v", i, got, want)
		}
	}
}
