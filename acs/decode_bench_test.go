package acs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// BenchmarkDecodeContent decodes what a create answers: one piece of
// content with an HTML body of about 1.5 KB, wrapped in {"data": ...}.
func BenchmarkDecodeContent(b *testing.B) {
	body := strings.Repeat(`<p>Lorem ipsum dolor <a href="https://example.com/x">sit</a> amet, consectetur adipiscing.</p>`, 16)
	obj := map[string]any{
		"id": 12345, "type": "story", "title": "Item 3 of feed 9: alpha beta gamma delta",
		"external_id": "farm-9:urn:feedfarm:9:3", "body": body, "summary": "alpha beta gamma delta river",
		"publish_date_utc": "2026-01-01 00:00:00", "date_modified_utc": "2026-01-01 00:00:00",
		"category_ids": []int{1, 2}, "self": "http://127.0.0.1:8089/v3/content/12345",
	}
	doc, err := json.Marshal(map[string]any{"data": obj}) // escapes HTML, as json.Marshal does
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var c Content
		if found, _, err := decode(doc, &c); err != nil || !found || c.ID != 12345 {
			b.Fatalf("decode = %v, %v, %d", found, err, c.ID)
		}
	}
}

// TestDecodeDataFastPath checks that the one-pass path for {"data": ...}
// first decodes exactly as the general path does: the same bodies with
// another key first take the general path.
func TestDecodeDataFastPath(t *testing.T) {
	for _, data := range []string{
		`{"id":5,"description":"Staff","date_modified_utc":"2026-01-02 03:04:05"}`,
		`[{"id":9}]`,
		`[{"id":1},{"id":2}]`,
		`null`,
		`[]`,
		`{"id":"seven"}`,
		`"text"`,
	} {
		for _, rest := range []string{`"page":"odd","total":3`, `"template":{"version":"3.0","data":[{"id":77}]}`} {
			fast := `{"data":` + data + `,` + rest + `}`
			general := `{` + rest + `,"data":` + data + `}`
			var a, b Segment
			fa, ma, ea := decode([]byte(fast), &a)
			fb, mb, eb := decode([]byte(general), &b)
			if fa != fb || ma != mb || (ea == nil) != (eb == nil) || !cmp.Equal(a, b) {
				t.Errorf("object from %s:\n fast    %v %+v %v %+v\n general %v %+v %v %+v", fast, fa, ma, ea, a, fb, mb, eb, b)
			}
			var la, lb []*Segment
			fa, ma, ea = decode([]byte(fast), &la)
			fb, mb, eb = decode([]byte(general), &lb)
			if fa != fb || ma != mb || (ea == nil) != (eb == nil) || !cmp.Equal(la, lb) {
				t.Errorf("list from %s:\n fast    %v %+v %v %+v\n general %v %+v %v %+v", fast, fa, ma, ea, la, fb, mb, eb, lb)
			}
		}
	}
}
