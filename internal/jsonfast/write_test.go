package jsonfast

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encoded is what encoding/json writes for v: json.Marshal's bytes with
// html, a json.Encoder's with SetEscapeHTML(false) without.
func encoded(t testing.TB, v any, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// stringCases hold every class of character encoding/json writes
// differently: each byte value alone, named and \u00XX control
// characters, HTML, invalid and truncated UTF-8, U+2028 and U+2029.
func stringCases() []string {
	strs := []string{"", "plain", `quote " and \ backslash /`, "<p>a &amp; b</p>", "tab\tnew\nline\rcr\bbs\fff\x00\x1f\x7f",
		"ünïcödé ✓ 😀 日本語", "bad \xff utf8 \xc3", "\xe2\x82", "\xed\xa0\x80 surrogate", "line\u2028para\u2029sep \ufffd",
		"</script>", "https://example.com/a?b=1&c=<2>"}
	for c := range 256 {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var b strings.Builder
		for range r.IntN(40) {
			if r.IntN(4) == 0 {
				b.WriteByte(byte(r.IntN(256)))
			} else {
				b.WriteRune(rune(r.IntN(0x2100)))
			}
		}
		strs = append(strs, b.String())
	}
	return strs
}

func TestAppendStringIsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range stringCases() {
		checkString(t, s)
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	if got, want := AppendString([]byte("x"), s), append([]byte("x"), encoded(t, s, false)...); !bytes.Equal(got, want) {
		t.Errorf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
	}
	if got, want := AppendStringHTML(nil, s), encoded(t, s, true); !bytes.Equal(got, want) {
		t.Errorf("AppendStringHTML(%q) = %s, json.Marshal writes %s", s, got, want)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases()[:12] {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

func TestAppendInt64s(t *testing.T) {
	t.Parallel()
	for _, v := range [][]int64{nil, {}, {0}, {3, -1, 2}, {-1 << 63, 1<<63 - 1}} {
		if got, want := AppendInt64s(nil, v), encoded(t, v, true); !bytes.Equal(got, want) {
			t.Errorf("AppendInt64s(%#v) = %s, encoding/json writes %s", v, got, want)
		}
	}
}

func TestAppendStrings(t *testing.T) {
	t.Parallel()
	for _, v := range [][]string{nil, {}, {""}, {"a", "<b> & \"c\"", "\u2028\xff"}} {
		if got, want := AppendStrings(nil, v), encoded(t, v, false); !bytes.Equal(got, want) {
			t.Errorf("AppendStrings(%#v) = %s, an encoder without HTML escaping writes %s", v, got, want)
		}
		if got, want := AppendStringsHTML(nil, v), encoded(t, v, true); !bytes.Equal(got, want) {
			t.Errorf("AppendStringsHTML(%#v) = %s, json.Marshal writes %s", v, got, want)
		}
	}
}

// BenchmarkAppendString writes a bench farm item's body (about 1.5 KB of
// HTML, as the outbox and the history write it).
//
//	go test -run '^$' -bench AppendString -benchmem ./internal/jsonfast/
func BenchmarkAppendString(b *testing.B) {
	body := strings.Repeat(`<p>Lorem ipsum dolor sit amet, <a href="https://example.org/a?b=1&amp;c=2">consectetur</a> adipiscing elit.</p>`+"\n", 14)
	for _, bc := range []struct {
		name string
		f    func([]byte, string) []byte
	}{{"plain", AppendString}, {"html", AppendStringHTML}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 4*len(body))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				buf = bc.f(buf[:0], body)
			}
		})
	}
}

// TestVerbatimTable: the table says what encoding/json does, byte by
// byte, with and without HTML escaping.
func TestVerbatimTable(t *testing.T) {
	for c := range 256 {
		for _, html := range []bool{false, true} {
			s := string([]byte{byte(c)})
			want := string(encoded(t, s, html)) == `"`+s+`"`
			if got := Verbatim(byte(c), html); got != want {
				t.Errorf("Verbatim(%#x, html %v) = %v; want %v", c, html, got, want)
			}
		}
	}
}
