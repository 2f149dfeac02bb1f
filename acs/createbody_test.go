package acs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fillCreate sets the fields of the struct v points to by reflection:
// every field when pick is nil, else those pick chooses. Strings hold what
// a JSON writer must escape, or not (HTML, U+2028, invalid UTF-8, control
// characters); a field of an unknown type fails the test, so a new kind of
// field cannot go unwritten.
func fillCreate(t *testing.T, v any, r *rand.Rand, pick func() bool) {
	t.Helper()
	strs := []string{"", "plain", `<p class="x">a & b</p>`, "tab\there\nnl \u2028 \u2029 \x01 \x7f", "bad \xff utf-8 \"q\" \\",
		"Ünïcödé 日本語 🙂"}
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		if pick != nil && !pick() {
			continue
		}
		f := rv.Field(i)
		switch f.Interface().(type) {
		case *string:
			f.Set(reflect.ValueOf(Ptr(strs[r.IntN(len(strs))])))
		case *bool:
			f.Set(reflect.ValueOf(Ptr(r.IntN(2) == 0)))
		case *Ref:
			f.Set(reflect.ValueOf(randRef(r)))
		case []Ref:
			refs := make([]Ref, r.IntN(3)) // empty but not nil: "[]"
			for j := range refs {
				refs[j] = *randRef(r)
			}
			f.Set(reflect.ValueOf(refs))
		case *Timestamp:
			ts := NewTimestamp(time.Date(1+r.IntN(9999), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC))
			f.Set(reflect.ValueOf(&ts))
		default:
			t.Fatalf("%T.%s: a field of type %s; write it in appendJSON and here", v, rv.Type().Field(i).Name, f.Type())
		}
	}
}

func randRef(r *rand.Rand) *Ref {
	ref := &Ref{ID: r.Int64N(1 << 40)}
	if r.IntN(2) == 0 {
		ref.Self = "https://api.example.com/v3/story/<1>&"
	}
	return ref
}

// TestCreateBodyIsEncodingJSON holds the hand-written create bodies to the
// bytes encoding/json writes for them (encode, as newRequest used it for
// every body), with every field set, none, and random subsets.
func TestCreateBodyIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, mk := range []func() bodyAppender{
		func() bodyAppender { return new(StoryCreate) },
		func() bodyAppender { return new(LinkCreate) },
	} {
		for n := range 500 {
			v := mk()
			switch n {
			case 0: // no field
			case 1:
				fillCreate(t, v, r, nil)
			default:
				fillCreate(t, v, r, func() bool { return r.IntN(2) == 0 })
			}
			var want bytes.Buffer
			if err := encode(&want, envelope{Template: envelopeTemplate{Version: APIVersion, Data: []any{v}}}); err != nil {
				t.Fatal(err)
			}
			if got := appendEnvelope(nil, v); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%T:\n got %s\nwant %s", v, got, want.Bytes())
			}
		}
	}
}

// TestNewRequestWritesCreateBody checks that newRequest sends the
// hand-written body, that a zero timestamp is still refused before
// anything is written, and that bodies built one after another in the
// reused buffer keep their own bytes.
func TestNewRequestWritesCreateBody(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:1", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var reqs []*request
	var wants [][]byte
	for range 20 {
		v := new(StoryCreate)
		fillCreate(t, v, r, nil)
		req, err := c.newRequest(http.MethodPost, "/v3/story", nil, v)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := encode(&want, envelope{Template: envelopeTemplate{Version: APIVersion, Data: []any{v}}}); err != nil {
			t.Fatal(err)
		}
		reqs, wants = append(reqs, req), append(wants, want.Bytes())
	}
	for i := range reqs {
		if !bytes.Equal(reqs[i].body, wants[i]) {
			t.Fatalf("request %d's body changed or differs:\n got %s\nwant %s", i, reqs[i].body, wants[i])
		}
	}
	zero := &StoryCreate{Title: Ptr("t"), PublishDateUTC: &Timestamp{}}
	if _, err := c.newRequest(http.MethodPost, "/v3/story", nil, zero); err == nil {
		t.Fatal("a zero timestamp was written, want a validation error")
	}
}

// BenchmarkCreateBody is a Story create's body as the worker sends one
// (about 1.5 KB of HTML), written by encoding/json and by hand.
//
//	go test -run '^$' -bench CreateBody -benchmem ./acs/
func BenchmarkCreateBody(b *testing.B) {
	pub := NewTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	req := &StoryCreate{
		Title: Ptr("Item 3 of feed 9: alpha beta gamma delta"), Summary: Ptr("alpha beta gamma delta river"),
		Body:       Ptr(strings.Repeat(`<p>Lorem ipsum dolor <a href="https://example.com/x">sit</a> amet, consectetur adipiscing.</p>`, 16)),
		ExternalID: Ptr("farm-9/fw1-8a55a60c210597345e3c"), PublishDateUTC: &pub, Categories: []Ref{{ID: 1}, {ID: 2}},
	}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := encode(&buf, envelope{Template: envelopeTemplate{Version: APIVersion, Data: []any{req}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendEnvelope(buf[:0], req)
		}
	})
}

// TestCheckTimestampsIsValidateTimestamps holds the creates' own timestamp
// checks to the reflective one: the same first bad field, the same error,
// for every mix of absent, valid, zero and out-of-range timestamps.
func TestCheckTimestampsIsValidateTimestamps(t *testing.T) {
	kinds := []func() *Timestamp{
		func() *Timestamp { return nil },
		func() *Timestamp { ts := NewTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); return &ts },
		func() *Timestamp { return &Timestamp{} },
		func() *Timestamp { ts := NewTimestamp(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); return &ts },
		func() *Timestamp { ts := NewTimestamp(time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC)); return &ts },
	}
	for a := range kinds {
		for b := range kinds {
			for c := range kinds {
				bodies := []bodyAppender{
					&StoryCreate{Title: Ptr("t"), PriorityUntilDateUTC: kinds[a](), PublishDateUTC: kinds[b](), ExpirationDateUTC: kinds[c]()},
					&LinkCreate{Title: Ptr("t"), PriorityUntilDateUTC: kinds[a](), PublishDateUTC: kinds[b](), ExpirationDateUTC: kinds[c]()},
				}
				for _, v := range bodies {
					got, want := v.checkTimestamps(), validateTimestamps(v)
					if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
						t.Fatalf("%T %d%d%d: checkTimestamps = %v, validateTimestamps = %v", v, a, b, c, got, want)
					}
					if got != nil && !errors.Is(got, ErrInvalid) {
						t.Fatalf("%T %d%d%d: %v does not match ErrInvalid", v, a, b, c, got)
					}
				}
			}
		}
	}
}
