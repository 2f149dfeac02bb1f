package publish

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/feedworker/feedworker/transform"
)

// jsonHead is the head as encoding/json writes it: what appendHead must
// write byte for byte.
func jsonHead(t testing.TB, env envelope) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&env); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fill sets every field of v, recursively, to a value that is not zero
// (s in every string), so that a field added to the payload, and not to
// the codec, shows as a difference.
func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(-42)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), s)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 2, 3, 4, 5, 6, 789, time.FixedZone("", -5*3600))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() || v.Type() == reflect.TypeFor[mergeInto]() {
				fill(v.Field(i), s)
			}
		}
	}
}

var headStrings = []string{
	"", "plain", "<p>a &amp; b</p>", "line\nbreak\r\ttab \"quoted\" back\\slash /",
	"\x00\x01\x1f\x7f \b\f", "\xff\xfe bad \xe2\x80", "\u2028\u2029 é 😀 \ufffd",
}

// TestEnvelopeHeadBytes: every field the payload and the envelope have is
// written as encoding/json writes it, and read back as json.Unmarshal
// reads it.
func TestEnvelopeHeadBytes(t *testing.T) {
	for _, s := range headStrings {
		var env envelope
		fill(reflect.ValueOf(&env).Elem(), s)
		env.V = envelopeV2
		env.Payload.Body = ""
		withEvent := env
		env.Payload.Event, env.Payload.Need = nil, nil
		checkHead(t, env)
		if _, ok := appendHead(nil, &withEvent); ok {
			t.Errorf("%q: an event's envelope was written by appendHead; want it left to encoding/json", s)
		}
		// And each field alone, the others at their zero (omitted) values.
		pv := reflect.ValueOf(&env.Payload).Elem()
		for i := range pv.NumField() {
			if !pv.Type().Field(i).IsExported() || pv.Type().Field(i).Name == "Event" || pv.Type().Field(i).Name == "Need" {
				continue
			}
			one := envelope{V: envelopeV2}
			reflect.ValueOf(&one.Payload).Elem().Field(i).Set(pv.Field(i))
			checkHead(t, one)
		}
	}
}

func checkHead(t *testing.T, env envelope) {
	t.Helper()
	want := jsonHead(t, env)
	got, ok := appendHead(nil, &env)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("head (ok %v):\n%s\nencoding/json:\n%s", ok, got, want)
	}
	var fast, slow envelope
	if err := json.Unmarshal(want, &slow); err != nil {
		t.Fatal(err)
	}
	if !parseHead(string(bytes.TrimSuffix(want, []byte("\n"))), &fast) {
		t.Fatalf("parseHead refused its own head:\n%s", want)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("parseHead read\n%+v\njson.Unmarshal\n%+v", fast, slow)
	}
}

// TestHeadSmallStringsOwnTheirBytes: the strings that can outlive a
// delivery (a metric's labels, the categories' map keys) do not point into
// the entry, which they would keep whole in memory; the body may.
func TestHeadSmallStringsOwnTheirBytes(t *testing.T) {
	env := envelope{V: envelopeV2, MergeInto: &mergeInto{Target: "t-1"}, Payload: transform.Payload{
		Type: "story", FeedID: "feed-1", ExternalID: "ext-1", Hash: "h-1", CategoryNames: []string{"news"},
		Title: "a title", Body: "<p>a body</p>",
	}}
	head, ok := appendHead(nil, &env)
	if !ok {
		t.Fatal("appendHead refused a plain envelope")
	}
	entry := string(bytes.TrimSuffix(head, []byte("\n")))
	var got envelope
	if !parseHead(entry, &got) {
		t.Fatalf("parseHead refused %s", entry)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(entry)))
	inside := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= start && p < start+uintptr(len(entry))
	}
	for name, s := range map[string]string{"type": got.Payload.Type, "feed_id": got.Payload.FeedID,
		"external_id": got.Payload.ExternalID, "hash": got.Payload.Hash, "category name": got.Payload.CategoryNames[0],
		"merge target": got.MergeInto.Target} {
		if inside(s) {
			t.Errorf("the %s %q points into the entry", name, s)
		}
	}
	if !inside(got.Payload.Body) {
		t.Error("the body was copied; it is read in place to spare a copy of each entry")
	}
}

// A head parseHead leaves alone goes to encoding/json, which reads it as
// before: other key spellings, nulls, escapes appendHead does not write.
func TestEnvelopeHeadFallback(t *testing.T) {
	for _, head := range []string{
		`{"v":2,"payload":{"Title":"case-folded key","hash":"h"}}`,
		`{"v":2,"payload":{"title":null,"author_id":null,"hash":"h"},"merge_into":null}`,
		`{"v":2,"payload":{"title":"lone \ud800 surrogate","summary":"\u00e9\ud83d\ude00"}}`,
		`{"v":2,"payload":{"title":"bad ` + "\xff" + `","category_ids":[1.0]}}`,
		`{"v":2,"payload":{"event":{"city":"Ghent"},"need":{"quantity":2}},"unknown":[1,{"a":2}]}`,
		`{"v":2,"payload":{"segments":[],"category_names":[]}} `,
		`{"v":2,"dates":{"expire_after":3600000000000,"other":1}}`,
		// Keys twice: json.Unmarshal fills the same pointer, slice or struct again.
		`{"v":2,"payload":{"hash":"h","author_id":1,"author_id":2,"segments":[1,2],"segments":[3]},` +
			`"merge_into":{"target":"a","categories":true},"merge_into":{"target":"b"},"dates":{"expire_after":1},"dates":{"priority_for":2}}`,
	} {
		var fast, slow envelope
		errSlow := json.Unmarshal([]byte(head), &slow)
		if err := decodeEnvelope(head+"\nbody", &fast); (err != nil) != (errSlow != nil) {
			t.Errorf("%s: decode error %v, json.Unmarshal %v", head, err, errSlow)
			continue
		}
		slow.Payload.Body = "body"
		if errSlow == nil && !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: decoded\n%+v\njson.Unmarshal\n%+v", head, fast, slow)
		}
	}
}

// FuzzEnvelopeHead: whatever the head, parseHead reads it as json.Unmarshal
// does or leaves it to it; and strings in any field are written as
// encoding/json writes them.
func FuzzEnvelopeHead(f *testing.F) {
	for _, s := range headStrings {
		var env envelope
		fill(reflect.ValueOf(&env).Elem(), s)
		env.Payload.Event, env.Payload.Need, env.Payload.Body = nil, nil, ""
		f.Add(jsonHead(f, env), s)
	}
	f.Fuzz(func(t *testing.T, head []byte, s string) {
		var fast, slow envelope
		errSlow := json.Unmarshal(head, &slow)
		if parseHead(string(head), &fast) {
			if errSlow != nil {
				t.Fatalf("%q: parseHead read what json.Unmarshal refuses (%v)", head, errSlow)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%q: parseHead read\n%+v\njson.Unmarshal\n%+v", head, fast, slow)
			}
		}
		env := envelope{V: envelopeV2, Payload: transform.Payload{Type: s, Title: strings.ToUpper(s), Summary: s + s,
			CategoryNames: []string{s}, Hash: s}, MergeInto: &mergeInto{Target: s}}
		checkHead(t, env)
	})
}
