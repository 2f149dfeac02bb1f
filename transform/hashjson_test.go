package transform

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestHashJSON holds appendHashJSON to encoding/json on payloads whose
// every field, nested ones included, is filled by reflection (each left
// zero about half the time): a field added to Payload, Event or Need
// without being written there fails it.
func TestHashJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	set := map[string]bool{}
	for i := range 3000 {
		var p Payload
		fill(rng, reflect.ValueOf(&p).Elem(), "", set)
		c := p
		c.Hash, c.Body = "", ""
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&c); err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		got, ok := appendHashJSON(nil, &p)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("payload %d:\n got %s (ok %v)\nwant %s", i, got, ok, want.Bytes())
		}
	}
	for _, name := range []string{"Type", "Hash", "Event.Start", "Event.RegistrationURL", "Need.Quantity", "Cancelled", "Segments"} {
		if !set[name] {
			t.Errorf("the filler never set %s", name)
		}
	}
}

// TestHashJSONDateOutOfRange: a date encoding/json refuses is left to it.
func TestHashJSONDateOutOfRange(t *testing.T) {
	for _, p := range []*Payload{
		{PublishDate: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Event: &Event{End: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{Need: &Need{ByDate: time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))}},
	} {
		if _, ok := appendHashJSON(nil, p); ok {
			t.Errorf("appendHashJSON(%+v) ok, encoding/json refuses it", p)
		}
	}
}

var fillStrings = []string{"", "a", "Title <b>&amp;</b> \"q\" \\ /", "line\nbreak\ttab\r\x01\x1f", "ünï 日本 \u2028\u2029", "bad \xff\xfe utf-8", "https://example.org/a?b=1&c=2"}

// fill sets v (and what it points to) to random values, zero about half
// the time, and records in set the fields it left non-zero.
func fill(rng *rand.Rand, v reflect.Value, path string, set map[string]bool) {
	if v.Kind() != reflect.Struct || v.Type() == reflect.TypeFor[time.Time]() {
		if rng.IntN(2) == 0 && path != "" {
			v.SetZero()
			return
		}
	}
	if path != "" {
		set[path] = true
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			zones := []*time.Location{time.UTC, time.FixedZone("", 3600+1800), time.FixedZone("", -7*3600)}
			v.Set(reflect.ValueOf(time.Date(1+rng.IntN(9998), time.Month(1+rng.IntN(12)), 1+rng.IntN(28),
				rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(3)*rng.IntN(1e9), zones[rng.IntN(len(zones))])))
			return
		}
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if path != "" {
				name = path + "." + name
			}
			fill(rng, v.Field(i), name, set)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(rng, v.Elem(), path, set)
	case reflect.Slice:
		n := rng.IntN(4)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(rng, v.Index(i), "", set)
		}
	case reflect.String:
		v.SetString(fillStrings[rng.IntN(len(fillStrings))])
	case reflect.Int, reflect.Int64:
		v.SetInt(rng.Int64N(1<<40) - 1<<39)
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	default:
		panic("fill: no value for " + v.Type().String() + " at " + path)
	}
}

// BenchmarkHashJSON is the hash's JSON of a typical story, by
// appendHashJSON and by the encoder it replaces.
func BenchmarkHashJSON(b *testing.B) {
	p := &Payload{Type: TypeStory, FeedID: "farm-0", ExternalID: "farm-0:3f2a9c", Title: "Item 3 of feed 0: river stone garden",
		Summary:  "alpha beta gamma delta river stone garden library council budget school harbour bridge concert",
		ImageURL: "https://farm.example/img/0/3.jpg", ExternalURL: "https://farm.example/0/items/3",
		PublishDate: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), CategoryNames: []string{"Category 3"}}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			appendHashJSON(make([]byte, 0, 1024), p)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			c := *p
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(&c)
		}
	})
}
