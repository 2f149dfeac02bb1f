package worker

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
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
	one, seven, yes, no := int64(1), int64(7), true, false
	qty := 3
	pls = append(pls,
		// Every escape encoding/json writes: named and \u00XX control
		// characters, HTML, invalid UTF-8, U+2028/2029, quotes and backslashes.
		&transform.Payload{Type: "link", Title: "\x00\x01\x1f\b\f\t\r\n\"\\/ end", Summary: "\xff\xfe ok \xe2\x80 \u2029\u2028é😀",
			Body: "<a href=\"x?a=1&amp;b=2\">x</a> > &lt; \x7f", MoreButtonText: "&", ExternalURL: "https://e.org/<>",
			CategoryIDs: []int64{}, CategoryNames: []string{"a<b", "", "\u2028"}, AuthorID: &one, PriorityID: &seven, StatusID: &seven,
			Segments: []int64{-1, 0, 9223372036854775807}, Private: &yes, ExclusiveToSegment: &no, Evergreen: &no,
			PublishDate: time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("", 3600)), ExpirationDate: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
			Need: &transform.Need{Quantity: &qty, ByDate: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}},
		// A time json.Marshal refuses adds nothing, as before, and the
		// good time after it is hashed whole.
		&transform.Payload{Type: "event", PublishDate: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Event: &transform.Event{}},
		&transform.Payload{Type: "event", PublishDate: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
			ExpirationDate: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
			PriorityUntil:  time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -(23*3600+59*60)))},
	)
	for i, pl := range pls {
		got, want := digest(pl).Map(), digestBefore(pl)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("payload %d: digest %v, was %v", i, got, want)
		}
	}
}

// FuzzDigestStrings holds the text fields' digests to json.Marshal's bytes
// for any string, valid UTF-8 or not.
func FuzzDigestStrings(f *testing.F) {
	for _, s := range []string{"", "plain", "<p>a &amp; b</p>\n", "\xff\u2028\x00\"\\", "é😀\t"} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		pl := &transform.Payload{Type: a, Title: b, Summary: a + b, Body: b + a, ImageURL: a, ExternalURL: b, MoreButtonText: a,
			CategoryNames: []string{a, b}}
		if got, want := digest(pl).Map(), digestBefore(pl); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q, %q: digest %v, was %v", a, b, got, want)
		}
	})
}

// BenchmarkDigest is the history digest of a bench farm item (about 1.5 KB
// of HTML body).
//
//	go test -run '^$' -bench Digest -benchmem ./worker/
func BenchmarkDigest(b *testing.B) {
	body := strings.Repeat(`<p>Lorem ipsum dolor sit amet, <a href="https://example.org/a?b=1&amp;c=2">consectetur</a> adipiscing elit.</p>`+"\n", 14)
	pl := &transform.Payload{Type: "story", FeedID: "farm-1", ExternalID: "guid:farm-1-7", Title: "Item 7 of feed 1: a title of some length",
		Summary: strings.Repeat("A summary sentence. ", 10), Body: body, ImageURL: "https://example.org/img/7.jpg",
		ExternalURL: "https://example.org/items/7", PublishDate: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		digest(pl)
	}
}
