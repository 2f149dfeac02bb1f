package jsonfast

import (
	"encoding/json"
	"testing"
)

// readCases are JSON strings (and not quite strings) in every form
// json.Unmarshal reads differently.
var readCases = []string{
	`""`, `"plain"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u00e9\u00E9 \u2028 \u0000"`, `"\ud83d\ude00 pair"`,
	`"\ud800 lone high"`, `"\udc00 lone low"`, `"\ud800\ud800 two highs"`, `"\udc00\ud800 reversed"`, `"\ud800\u0041 high then A"`,
	`"\ud800\"`, `"\ud800\u12"`, "\"bad \xff utf-8 \xc3\"", "\"bad \xff with escape \\n\"", "\"truncated \xe2\x82\"",
	"\"ctl \x01\"", `"\x"`, `"\'"`, `"\u12g4"`, `"\u12"`, `"unterminated`, `"trailing \`, `"`, ``, `x`, `"a" tail`, `"a","b"`,
	"\"é 日本語 😀\"", "\"\xed\xa0\x80 encoded surrogate\"",
}

func TestReadStringAsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, s := range readCases {
		checkRead(t, s)
	}
}

func FuzzReadString(f *testing.F) {
	for _, s := range readCases {
		f.Add(s)
	}
	f.Fuzz(checkRead)
}

// checkRead: what ReadString reads, json.Unmarshal reads the same; a
// whole input json.Unmarshal reads as a string, ReadString reads too; and
// it reads a string and a []byte alike.
func checkRead(t *testing.T, s string) {
	t.Helper()
	v, n, ok := ReadString(s)
	bv, bn, bok := ReadString([]byte(s))
	if v != bv || n != bn || ok != bok {
		t.Fatalf("%q: read as a string %q, %d, %v; as bytes %q, %d, %v", s, v, n, ok, bv, bn, bok)
	}
	var w string
	wholeErr := json.Unmarshal([]byte(s), &w)
	if !ok {
		if wholeErr == nil && len(s) > 0 && s[0] == '"' {
			t.Fatalf("%q: ReadString refused what json.Unmarshal reads as %q", s, w)
		}
		return
	}
	var part string
	if err := json.Unmarshal([]byte(s[:n]), &part); err != nil {
		t.Fatalf("%q: ReadString read %q from %q, which json.Unmarshal refuses: %v", s, v, s[:n], err)
	}
	if part != v {
		t.Fatalf("%q: ReadString read %q, json.Unmarshal %q", s, v, part)
	}
}
