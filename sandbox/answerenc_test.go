package sandbox

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encoderJSON is what writeJSON wrote before appendAnswer: json.Encoder
// without HTML escaping.
func encoderJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAppendAnswerIsEncoderJSON(t *testing.T) {
	t.Parallel()
	strs := []string{"", "plain", `quote " and \ backslash`, "<p>a & b</p>", "tab\tnew\nline\rcr\bbs\fff\x00\x1f\x7f",
		"ünïcödé ✓ 😀", "bad \xff utf8 \xc3", "line\u2028para\u2029sep", "</script>"}
	values := []any{
		nil, 0, int64(-7), int64(1 << 62), true, false, 1.5, // a float goes to the encoder
		[]int64{}, []int64(nil), []int64{3, 1, 2},
		idObject{ID: 9}, []idObject{{1}, {2}}, []idObject(nil),
		map[string]any(nil), map[string]any{},
		[]map[string]any{{"b": 1, "a": "x"}}, []map[string]any(nil), []any{"a", int64(1), nil, map[string]any{"z": true}},
		[]mergeField{{}}, map[string]*apiError{"error": {Status: 400, Message: "bad <input>"}},
	}
	for _, s := range strs {
		values = append(values, s, map[string]any{s: s, "k" + s: []any{s}})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteRune(rune(rng.IntN(0x2100)))
		}
		values = append(values, b.String())
	}
	values = append(values, map[string]any{"data": values[:len(values)-200], "page": 1, "total": int64(3)})
	for i, v := range values {
		got, err := appendAnswer(nil, v)
		if err != nil {
			t.Fatalf("value %d (%#v): %v", i, v, err)
		}
		if want := encoderJSON(t, v); !bytes.Equal(got, want) {
			t.Errorf("value %d (%#v):\n got %s\nwant %s", i, v, got, want)
		}
	}
}

// TestAnswersAreEncoderJSON checks answers of the API, over every
// collection's list and a created story with HTML and escapes in its
// text: each must be the encoder's JSON of itself decoded (keys
// sorted, the same escapes), as writeJSON wrote before appendAnswer.
func TestAnswersAreEncoderJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	bodies := [][]byte{f.must(201, "POST", "/v3/category", env(map[string]any{"description": "News & <more>"})).body}
	for coll := range f.srv.st.colls {
		bodies = append(bodies, f.must(200, "GET", "/v3/"+coll, nil).body)
	}
	story := map[string]any{"title": "A <b>bold</b> \"quoted\" title & more\u2028", "external_id": "e-1",
		"body": "<p>tab\there</p>\n<img src=\"/x.png\">", "categories": []any{map[string]any{"id": 1}}}
	bodies = append(bodies, f.must(201, "POST", "/v3/story", env(story)).body,
		f.must(200, "GET", "/v3/content/1", nil).body)
	for _, b := range bodies {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
		if want := encoderJSON(t, v); !bytes.Equal(b, want) {
			t.Errorf("answer:\n got %s\nwant %s", b, want)
		}
	}
}
