package history

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// itemStrings are the strings the generated items draw from: every class
// of character the JSON encoders treat differently.
var itemStrings = []string{
	"", "a", "fw1-5d382e22503445cdd084", "Item 20 of feed 541: festival energy",
	`quote " and \ backslash`, "tags <b> & </b>", "line\nbreak\ttab\rcr\bbs\ffeed",
	"\x00\x01\x1f\x7f control", "é ü 日本語 🎉", "bad \xff\xfe utf-8 \xc3", "sep \u2028 and \u2029",
	"https://example.com/a?b=1&c=<2>", "guid:" + strings.Repeat("x", 300),
}

func randomItem(r *rand.Rand) Item {
	pick := func() string { return itemStrings[r.IntN(len(itemStrings))] }
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -r.Int64N(1000)
		case 2:
			return math.MaxInt64 - r.Int64N(3)
		}
		return r.Int64N(1 << 45)
	}
	it := Item{ID: pick(), Title: pick(), Link: pick(), GUID: pick(), FirstSeen: num(), LastSeen: num()}
	switch r.IntN(3) {
	case 1:
		it.Digest = map[string]string{}
	case 2:
		it.Digest = map[string]string{pick(): pick(), pick(): pick(), "t": pick()}
	}
	switch r.IntN(4) {
	case 0: // nil events: "ev":null
	case 1:
		it.Events = []Event{}
	default:
		for range 1 + r.IntN(4) {
			e := Event{Kind: Kind(pick()), At: num(), Count: int(num()), ContentID: num(), Attempt: int(num()), Next: num(), Status: int(num()), Detail: pick()}
			switch r.IntN(3) {
			case 1:
				e.Fields = []string{}
			case 2:
				e.Fields = []string{pick(), pick()}
			}
			it.Events = append(it.Events, e)
		}
	}
	return it
}

func TestItemJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		it := randomItem(r)
		want, err := json.Marshal(&it)
		if err != nil {
			t.Fatal(err)
		}
		got := appendItemJSON(nil, &it)
		if string(got) != string(want) {
			t.Fatalf("item %d: wrote\n%s\nencoding/json writes\n%s", i, got, want)
		}
		// What is read back is what encoding/json reads.
		var wantIt Item
		if err := json.Unmarshal(want, &wantIt); err != nil {
			t.Fatal(err)
		}
		gotIt, err := parseItemJSON(got)
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		if d := cmp.Diff(wantIt, gotIt); d != "" {
			t.Fatalf("item %d read back (-encoding/json +parseItemJSON):\n%s", i, d)
		}
		if _, ok := scanItem(got); !ok {
			t.Errorf("item %d: the fast reader gave up on what it wrote:\n%s", i, got)
		}
	}
}

// TestParseItemJSONAsEncodingJSON reads damaged and differently written
// records: each is read as json.Unmarshal reads it, or refused as it
// refuses it.
func TestParseItemJSONAsEncodingJSON(t *testing.T) {
	inputs := []string{
		`{"id":"a","f0":1,"ev":null}`,
		`{"id":"a","f0":1,"ev":[]}`,
		` {"id":"a","f0":1,"ev":[]}`,
		`{"id":"a","f0":1,"ev":[]} `,
		`{"id":"a","f0":1,"ev":[]}x`,
		`{"ID":"a","F0":1,"ev":[]}`,
		`{"id":"a","id":"b","f0":1}`,
		`{"id":"a","ev":[{"k":"x","t":1,"n":2}],"ev":[{"k":"y","t":3}]}`,
		`{"id":"a","dg":{"t":"1"},"dg":{"u":"2"}}`,
		`{"id":null,"f0":null,"ev":null}`,
		`{"id":"a","f0":1.0}`,
		`{"id":"a","f0":1e3}`,
		`{"id":"a","f0":01}`,
		`{"id":"a","f0":-0}`,
		`{"id":"a","f0":-}`,
		`{"id":"a","f0":99999999999999999999}`,
		`{"id":"a","ev":[{"k":"x","n":99999999999999999999}]}`,
		`{"id":"\u00e9\ud83c\udf89\u2028","ti":"a\/b"}`,
		`{"id":"\ud800","ti":"x"}`,
		"{\"id\":\"raw \xff\"}",
		"{\"id\":\"ctl \x01\"}",
		`{"id":"a","extra":{"x":[1,2]}}`,
		`{"id":"a","dg":{"t":null}}`,
		`{"id":"a","ev":[{"k":"x","f":null}]}`,
		`{"id":"a","ev":[{"k":"x","f":["a",1]}]}`,
		`{}`, `[]`, `null`, ``, `{`, `{"id"`, `{"id":`, `{"id":"a"`, `{"id":"a",}`, `{"id":"a\`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		it := randomItem(r)
		b := appendItemJSON(nil, &it)
		for range 10 {
			m := []byte(string(b))
			switch r.IntN(3) {
			case 0:
				m = m[:r.IntN(len(m))]
			case 1:
				m[r.IntN(len(m))] = `{}[]:,"\0-e .nx`[r.IntN(15)]
			default:
				i := r.IntN(len(m))
				m = append(m[:i], m[i+1:]...)
			}
			inputs = append(inputs, string(m))
		}
	}
	for _, in := range inputs {
		var want Item
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := parseItemJSON([]byte(in))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, encoding/json's %v", in, err, wantErr)
		}
		if err == nil {
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("%q read (-encoding/json +parseItemJSON):\n%s", in, d)
			}
		}
	}
}

func BenchmarkItemJSON(b *testing.B) {
	it := Item{ID: "fw1-5d382e22503445cdd084", Title: "Item 20 of feed 541: festival energy council concert budget budget",
		Link: "https://farm.example/541/items/20", GUID: "fw1-5d382e22503445cdd084", FirstSeen: 1764309000123, LastSeen: 1764309000123,
		Digest: map[string]string{"b": "1a2b3c", "t": "4d5e6f", "m": "a1b2c3"},
		Events: []Event{{Kind: Queued, At: 1764309000123}, {Kind: "created", At: 1764309001123, ContentID: 123456, Attempt: 1, Status: 201}}}
	data, _ := json.Marshal(&it)
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var x Item
			_ = json.Unmarshal(data, &x)
			_, _ = json.Marshal(&x)
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			x, _ := parseItemJSON(data)
			_ = appendItemJSON(make([]byte, 0, itemJSONSize(&x)), &x)
		}
	})
}

// TestRecordKeepsTheDigestAsStored reads records with their digest left as
// stored and writes them back: they read as the record read whole, and
// the digest kept is the stored map (the bbolt write keeps it so when no
// update changes it).
func TestRecordKeepsTheDigestAsStored(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		it := randomItem(r)
		stored := appendItemJSON(nil, &it)
		got, dg, err := parseRecordJSON(stored)
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		if len(it.Digest) > 0 && (dg == nil || got.Digest != nil) {
			t.Fatalf("item %d: digest read into a map (%v), not kept as stored (%q)", i, got.Digest, dg)
		}
		whole, err := parseItemJSON(stored)
		if err != nil {
			t.Fatal(err)
		}
		// Read back, it is the record read whole (the bytes may differ
		// only where invalid UTF-8 was written as U+FFFD escaped).
		back := appendRecordJSON(nil, &got, dg)
		readBack, err := parseItemJSON(back)
		if err != nil {
			t.Fatalf("item %d: wrote back %s: %v", i, back, err)
		}
		if d := cmp.Diff(whole, readBack); d != "" {
			t.Fatalf("item %d: written back and read (-read whole +written back):\n%s", i, d)
		}
		if dg != nil {
			var m map[string]string
			if err := json.Unmarshal(dg, &m); err != nil {
				t.Fatalf("item %d: kept digest %q: %v", i, dg, err)
			}
			if d := cmp.Diff(whole.Digest, m); d != "" {
				t.Fatalf("item %d: kept digest (-stored +kept):\n%s", i, d)
			}
		}
		got.Digest, whole.Digest = nil, nil
		if d := cmp.Diff(whole, got); d != "" {
			t.Fatalf("item %d: the rest read differently (-parseItemJSON +parseRecordJSON):\n%s", i, d)
		}
	}
}

func TestUpdateJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		it := randomItem(r)
		u := Update{ID: it.ID, Title: it.Title, Link: it.Link, GUID: it.GUID, Seen: r.IntN(2) == 0}
		if len(it.Events) > 0 {
			u.Event = it.Events[0]
		}
		if r.IntN(3) > 0 {
			for f := range numFields {
				if r.IntN(4) > 0 {
					u.Digest.Set(f, r.Uint32())
				}
			}
		}
		want, err := json.Marshal(&u)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendUpdateJSON([]byte("x"), &u); string(got[1:]) != string(want) {
			t.Fatalf("update %d: wrote\n%s\nencoding/json writes\n%s", i, got[1:], want)
		}
	}
}

// BenchmarkUpdateJSON is one first-sight update of a bench farm item as
// the Redis history's write encodes it, by hand and by encoding/json.
//
//	go test -run '^$' -bench UpdateJSON -benchmem ./history/
func BenchmarkUpdateJSON(b *testing.B) {
	u := Update{ID: "urn:feedfarm:541:7", Title: "Item 7 of feed 541: festival energy & more", Link: "http://127.0.0.1:8080/feed/541/item/7",
		GUID: "urn:feedfarm:541:7", Seen: true, Event: Event{Kind: Queued, At: 1765100000000}}
	for f := range numFields {
		u.Digest.Set(f, uint32(f)*0x123457)
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendUpdateJSON(buf[:0], &u)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(u); err != nil {
				b.Fatal(err)
			}
		}
	})
}
