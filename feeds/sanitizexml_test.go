package feeds

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// needsSanitizingByByte is needsSanitizing as it was written first, one
// byte at a time: the reference the word-at-a-time version must match.
func needsSanitizingByByte(b []byte) bool {
	for i, c := range b {
		switch {
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
			return true
		case c == 0xEF && i+2 < len(b) && b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF):
			return true
		case c == '&' && i+1 < len(b) && b[i+1] == '#':
			if n, ok := charRef(b[i:]); ok {
				if r, err := refValue(b[i+2 : i+n-1]); err == nil && !xmlChar(r) {
					return true
				}
			}
		}
	}
	return false
}

// TestNeedsSanitizing compares needsSanitizing with the byte-by-byte
// reference on random documents made of the pieces that matter (each
// forbidden character raw and as a reference, their allowed neighbours,
// pieces cut at a word's edge) and on every byte at every offset of a
// clean line.
func TestNeedsSanitizing(t *testing.T) {
	pieces := []string{"<p>plain text of a feed</p>", "\n", "\t", "\r", "\x00", "\x01", "\x1f", " ", "\x7f", "\xef",
		"\xef\xbf", "\xef\xbf\xbe", "\xef\xbf\xbf", "\xef\xbf\xbd", "\xef\xbe\xbf", "é", "&#", "&#x", "&#1;", "&#9;",
		"&#x1F;", "&#xFFFE;", "&#65535;", "&#65533;", "&#xD800;", "&#12345678901;", "&amp;", "&", "#", ";", "1", "x"}
	r := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 200_000; n++ {
		var b []byte
		for k := r.IntN(12); k >= 0; k-- {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		if got, want := needsSanitizing(b), needsSanitizingByByte(b); got != want {
			t.Fatalf("needsSanitizing(%q) = %v, want %v", b, got, want)
		}
	}
	line := []byte("<item><title>A clean title, 42 &amp; more</title></item>\n")
	for off := 0; off < len(line); off++ {
		for c := 0; c < 256; c++ {
			b := bytes.Clone(line)
			b[off] = byte(c)
			if got, want := needsSanitizing(b), needsSanitizingByByte(b); got != want {
				t.Fatalf("needsSanitizing(%q) = %v, want %v", b, got, want)
			}
		}
	}
}

func BenchmarkNeedsSanitizing(b *testing.B) {
	doc := bytes.Repeat([]byte("<item>\n  <title>Item 3 of feed 9: alpha beta</title>\n  <description>&lt;p&gt;Lorem ipsum dolor &lt;a href=&quot;https://example.com/x&quot;&gt;sit&lt;/a&gt; amet.&lt;/p&gt;</description>\n</item>\n"), 200)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if needsSanitizing(doc) {
			b.Fatal("clean document flagged")
		}
	}
}

// TestHoldsLiftMark compares holdsLiftMark with the four searches it
// stands for, on random documents made of pieces near the forms it finds.
func TestHoldsLiftMark(t *testing.T) {
	want := func(doc []byte) bool {
		return bytes.Contains(doc, []byte(liftMark)) ||
			bytes.Contains(doc, []byte("e000;")) || bytes.Contains(doc, []byte("E000;")) ||
			bytes.Contains(doc, []byte("57344;"))
	}
	pieces := []string{"<p>text</p>", "e", "E", "0", "00", "000", "000;", ";", "&#x", "&#", "e000", "E000", "e00",
		"57344", "57344;", "7344;", "5", liftMark, liftMark[:1], liftMark[:2], "\xee", "\x80", "f000;", "&#xe000;", "&#57344;"}
	r := rand.New(rand.NewPCG(9, 10))
	for n := 0; n < 200_000; n++ {
		var doc []byte
		for k := r.IntN(10); k >= 0; k-- {
			doc = append(doc, pieces[r.IntN(len(pieces))]...)
		}
		if got := holdsLiftMark(doc); got != want(doc) {
			t.Fatalf("holdsLiftMark(%q) = %v, want %v", doc, got, !got)
		}
	}
}
