package acs

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// refViaDecode is Ref under another name, which decode reads by its
// general paths (scanRef serves *Ref only).
type refViaDecode Ref

// refCases are answers a create may get, with whether scanRef reads them
// itself (the rest go to decode's other paths).
var refCases = []struct {
	body string
	fast bool
}{
	{`{"data":{"id":12,"self":"http://h/v3/story/12"}}`, true},
	{` {"data" : { "type":"story","id" : 7 , "body":"<p>a \"q\" \\ \/ \u00e9 \n</p>","self":"s","tags":[1,2.5e3,-0.1E-2,true,false,null,{"a":[]}],"x":{}} , "page":null} `, false}, // page: a key decode reads
	{`{"data":{"type":"story","id":7,"body":"<p>a \"q\" \\ \/ \u00e9 \n</p>","self":"s","tags":[1,2.5e3,-0.1E-2,true,false,null,{"a":[]}],"x":{}},"meta":{"n":1}}`, true},
	{`{"data":{}}`, true},
	{`{"data":{"id":-0}}`, true},
	{"{\"data\":{\"id\":3,\"body\":\"caf\xc3\xa9 \xff\"}}", true}, // invalid UTF-8 passes, as in encoding/json
	{`{"data":{"id":3},"data":{"self":"x"}}`, false},
	{`{"data":{"id":"12"}}`, false},
	{`{"data":{"id":12.0}}`, false},
	{`{"data":{"id":1e2}}`, false},
	{`{"data":{"id":99999999999999999999}}`, false},
	{`{"data":{"id":null,"self":null}}`, false},
	{`{"data":{"ID":4}}`, false},
	{`{"data":{"Self":"x","id":4}}`, false},
	{`{"data":{"\u0069d":4}}`, false},
	{`{"data":{"self":"a\/b","id":4}}`, false},
	{`{"data":[{"id":4}]}`, false},
	{`{"data":null}`, false},
	{`{"id":4,"data":{"id":5}}`, false},
	{`{"data":{"id":5},"Template":{"version":"3.0","data":[{"id":6}]}}`, false},
	{`{"id":4}`, false},
	{`[{"id":4}]`, false},
	{`{"data":{"id":5}} x`, false},
	{`{"data":{"id":5},}`, false},
	{`{"data":{"id":5,}}`, false},
	{`{"data":{"id":5,"b":[1,]}}`, false},
	{`{"data":{"id":5,"b":"tab	inside"}}`, false},
	{`{"data":{"id":5,"b":"\x"}}`, false},
	{`{"data":{"id":5,"b":"\u12"}}`, false},
	{`{"data":{"id":5,"b":01}}`, false},
	{`{"data":{"id":5,"b":tru}}`, false},
	{`{"data":{"id":5,"b":"open}}`, false},
	{`{"data":{"id":5`, false},
	{`{"data":{"id":5,"b":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`, false},
	{``, false},
}

// TestScanRef checks that what scanRef reads is what decode reads by its
// general paths, and that it leaves those paths what it does not read.
func TestScanRef(t *testing.T) {
	for _, c := range refCases {
		ref, ok := scanRef([]byte(c.body))
		if ok != c.fast {
			t.Errorf("scanRef(%s): ok %v, want %v", c.body, ok, c.fast)
		}
		checkScanRef(t, []byte(c.body), ref, ok)
		var viaRef Ref
		var viaGeneral refViaDecode
		f1, m1, e1 := decode([]byte(c.body), &viaRef)
		f2, m2, e2 := decode([]byte(c.body), &viaGeneral)
		if f1 != f2 || m1 != m2 || (e1 == nil) != (e2 == nil) || viaRef != Ref(viaGeneral) {
			t.Errorf("decode(%s) into *Ref = %v %+v %v %+v; by the general path %v %+v %v %+v", c.body, f1, m1, e1, viaRef, f2, m2, e2, viaGeneral)
		}
	}
}

// checkScanRef fails when scanRef read a body that is not JSON, or read
// it otherwise than decode's general paths.
func checkScanRef(t *testing.T, body []byte, ref Ref, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	if !json.Valid(body) {
		t.Fatalf("scanRef read %q, which is not JSON", body)
	}
	var want refViaDecode
	found, _, err := decode(body, &want)
	if err != nil || !found || ref != Ref(want) {
		t.Fatalf("scanRef(%q) = %+v; decode = %v, %v, %+v", body, ref, found, err, want)
	}
}

func FuzzScanRef(f *testing.F) {
	for _, c := range refCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ref, ok := scanRef(body)
		checkScanRef(t, body, ref, ok)
	})
}

// BenchmarkDecodeRef decodes a create's answer into a Ref, as the worker
// reads it (compare BenchmarkDecodeContent, the whole content).
func BenchmarkDecodeRef(b *testing.B) {
	body := strings.Repeat(`<p>Lorem ipsum dolor <a href="https://example.com/x">sit</a> amet, consectetur adipiscing.</p>`, 16)
	obj := map[string]any{
		"id": 12345, "type": "story", "title": "Item 3 of feed 9: alpha beta gamma delta",
		"external_id": "farm-9:urn:feedfarm:9:3", "body": body, "summary": "alpha beta gamma delta river",
		"publish_date_utc": "2026-01-01 00:00:00", "date_modified_utc": "2026-01-01 00:00:00",
		"category_ids": []int{1, 2}, "self": "http://127.0.0.1:8089/v3/content/12345",
	}
	doc, err := marshal(map[string]any{"data": obj})
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"scan", "general"} {
		b.Run(path, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				var id int64
				var found bool
				var err error
				if path == "scan" {
					var r Ref
					found, _, err = decode(doc, &r)
					id = r.ID
				} else {
					var r refViaDecode
					found, _, err = decode(doc, &r)
					id = r.ID
				}
				if err != nil || !found || id != 12345 {
					b.Fatalf("decode = %v, %v, %d", found, err, id)
				}
			}
		})
	}
}

// TestSpecial8 checks the eight-byte test against the byte-by-byte one:
// every byte value at every position among bytes that need no look, and
// random words.
func TestSpecial8(t *testing.T) {
	want := func(w uint64) bool {
		for k := 0; k < 8; k++ {
			if c := byte(w >> (8 * k)); c == '"' || c == '\\' || c < 0x20 {
				return true
			}
		}
		return false
	}
	for _, fill := range []byte{'a', ' ', 0x7f, 0x80, 0xff, '!', '#', '[', ']'} {
		for pos := 0; pos < 8; pos++ {
			for c := 0; c < 256; c++ {
				var b [8]byte
				for k := range b {
					b[k] = fill
				}
				b[pos] = byte(c)
				w := binary.LittleEndian.Uint64(b[:])
				if special8(w) != want(w) {
					t.Fatalf("special8(% x) = %v", b, special8(w))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		w := r.Uint64()
		if special8(w) != want(w) {
			t.Fatalf("special8(%#x) = %v", w, special8(w))
		}
	}
}
