package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/transform"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	yes := true
	for _, body := range []string{
		"",
		"<p>one</p>\n<p>two</p>\n",
		"\n\n{\"v\":1}\n",
		"<pre>\r\n\ttabs &amp; \u2028 \xff</pre>",
	} {
		in := envelope{
			Payload: transform.Payload{
				Type: transform.TypeStory, FeedID: "f", ExternalID: "e1", Title: "a\nb <c>", Summary: "s\n",
				Body: body, PublishDate: time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC), CategoryNames: []string{"x"},
				Private: &yes, Hash: "h",
			},
			RecreateDeleted: true, Dates: transform.DateRules{ExpireAfter: time.Hour},
			MergeInto: &mergeInto{Target: "f\x00e0", Categories: true},
		}
		data, err := encodeEnvelope(in)
		if err != nil {
			t.Fatal(err)
		}
		var out envelope
		if err := decodeEnvelope(string(data), &out); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		in.V = envelopeV2
		if !reflect.DeepEqual(out, in) {
			t.Errorf("body %q: decoded %+v; want %+v", body, out, in)
		}
		if !bytes.HasSuffix(data, []byte("\n"+body)) {
			t.Errorf("body %q: entry %q does not end with the raw body", body, data)
		}
	}
}

// A version 1 entry (json.Marshal of the envelope, as earlier versions
// wrote it) decodes to what was written.
func TestEnvelopeVersion1(t *testing.T) {
	in := envelope{V: envelopeV1, Payload: transform.Payload{Type: transform.TypeLink, ExternalID: "e", Title: "t",
		Body: "<p>a\nb</p>", Hash: "h"}, CreateCategories: true}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out envelope
	if err := decodeEnvelope(string(data), &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %+v; want %+v", out, in)
	}
}

func TestEnvelopeRefused(t *testing.T) {
	for _, data := range []string{
		`{"v":3,"payload":{}}`,
		`{"v":3,"payload":{}}` + "\nbody",
		`{"v":1,"payload":{}}` + "\nbody",
		`{"v":2,"payload":{}}`,
		`{"v":2,"payload":{"body":"x"}}` + "\nbody",
	} {
		var env envelope
		if err := decodeEnvelope(data, &env); !errors.Is(err, errEnvelopeVersion) {
			t.Errorf("%q: err = %v; want errEnvelopeVersion", data, err)
		}
	}
	var env envelope
	if err := decodeEnvelope("{\"v\":2,\n", &env); err == nil {
		t.Error("a cut JSON line decoded")
	}
}

// benchEnvelope is an outbox entry of a bench farm item: a story with
// about 1.5 KB of HTML.
func benchEnvelope() envelope {
	body := strings.Repeat(`<p>Lorem ipsum dolor sit amet, <a href="https://example.org/a?b=1&amp;c=2">consectetur</a> adipiscing elit.</p>`+"\n", 14)
	return envelope{Payload: transform.Payload{Type: transform.TypeStory, FeedID: "farm-1", ExternalID: "guid:https://farm.example/1/items/7",
		Title: "Item 7 of feed 1: a title of some length", Summary: strings.Repeat("A summary sentence. ", 10), Body: body,
		ImageURL: "https://example.org/img/7.jpg", ExternalURL: "https://example.org/items/7",
		PublishDate: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Hash: strings.Repeat("0123456789abcdef", 4)}}
}

// BenchmarkEnvelope is the outbox entry's encode (Accept) and decode (each
// delivery attempt).
//
//	go test -run '^$' -bench Envelope -benchmem ./publish/
func BenchmarkEnvelope(b *testing.B) {
	env := benchEnvelope()
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeEnvelope(env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		data, err := encodeEnvelope(env)
		if err != nil {
			b.Fatal(err)
		}
		entry := string(data) // as a claim hands it over
		b.ReportAllocs()
		for b.Loop() {
			var out envelope
			if err := decodeEnvelope(entry, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEntryHeadAppended: an entry's head appended after other heads (one
// buffer for a poll's entries, Accept) is the entry encodeEnvelope writes
// without its body, for an envelope appendHead writes and for one left to
// encoding/json (an event's), and the bytes before it stay as they were.
func TestEntryHeadAppended(t *testing.T) {
	yes := true
	story := envelope{Payload: transform.Payload{Type: transform.TypeStory, FeedID: "f", ExternalID: "e1", Title: "a\nb <c>",
		Body: "<p>one</p>\n<p>two</p>\n", PublishDate: time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC), Private: &yes, Hash: "h"},
		MergeInto: &mergeInto{Target: "f\x00e0"}}
	event := story
	event.Payload.Type = transform.TypeEvent
	event.Payload.Event = &transform.Event{Start: time.Date(2026, 3, 1, 18, 0, 0, 0, time.UTC), City: "Ghent"}
	for _, env := range []envelope{story, event} {
		whole, err := encodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{"", "{\"v\":2}\nother head\n"} {
			// Room to spare, and none: the head is written in place or
			// after a copy.
			for _, room := range []int{0, 4096} {
				dst := append(make([]byte, 0, len(prefix)+room), prefix...)
				got, err := appendEntryHead(dst, env)
				if err != nil {
					t.Fatal(err)
				}
				if want := prefix + strings.TrimSuffix(string(whole), env.Payload.Body); string(got) != want {
					t.Errorf("%s after %q (room %d):\n got %q\nwant %q", env.Payload.Type, prefix, room, got, want)
				}
			}
		}
	}
}
