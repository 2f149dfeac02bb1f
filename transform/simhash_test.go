package transform

import (
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// simHashBefore is BodySimHash as first written (a slice of word hashes,
// unicode tables for every rune). SimHashes are stored as repost
// fingerprints, so the faster version must give exactly the same values.
func simHashBefore(s string) (uint64, bool) {
	var w []uint64
	const offset, prime = 14695981039346656037, 1099511628211
	h, in, tag := uint64(offset), false, false
	for _, r := range s {
		switch {
		case tag:
			tag = r != '>'
			continue
		case r == '<':
			tag = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			r = unicode.ToLower(r)
			h = (h ^ uint64(r)) * prime
			in = true
			continue
		}
		if in {
			w = append(w, h)
			h, in = offset, false
		}
	}
	if in {
		w = append(w, h)
	}
	if len(w) < MinSimHashWords {
		return 0, false
	}
	var v [64]int32
	for i := 0; i+3 <= len(w); i++ {
		x := mix64(w[i]*0x9e3779b97f4a7c15 ^ bits.RotateLeft64(w[i+1], 21) ^ bits.RotateLeft64(w[i+2], 42))
		for b := range 64 {
			v[b] += int32(x>>b&1)*2 - 1
		}
	}
	var out uint64
	for b := range 64 {
		if v[b] > 0 {
			out |= 1 << b
		}
	}
	return out, true
}

func TestBodySimHashUnchanged(t *testing.T) {
	words := strings.Repeat("Ünïcödé ΑΒΓ straße İstanbul 123 x²³ ＡＢＣ mixed-Case <b>bold</b> \xff\xfe bad bytes, ", 8)
	inputs := []string{"", "<p>", words, "<p>" + words + "</p", strings.ToUpper(words), words[:len(words)-3]}
	if dir := corpusDirOrEmpty(); dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				inputs = append(inputs, string(b)) // whole documents: tags, text, entities, any charset
			}
		}
	}
	var hashed int
	for i, s := range inputs {
		got, gotOK := BodySimHash(s)
		want, wantOK := simHashBefore(s)
		if got != want || gotOK != wantOK {
			t.Errorf("input %d (%.40q): %016x %v, was %016x %v", i, s, got, gotOK, want, wantOK)
		}
		if wantOK {
			hashed++
		}
	}
	if hashed < 3 {
		t.Errorf("only %d inputs long enough to hash", hashed)
	}
}

// corpusDirOrEmpty is corpusDir without skipping: "" when there is none.
func corpusDirOrEmpty() string {
	dir := os.Getenv("FEEDWORKER_CORPUS")
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "feeds")); err == nil && fi.IsDir() {
		return filepath.Join(dir, "feeds")
	}
	return ""
}

func BenchmarkBodySimHash(b *testing.B) {
	body := strings.Repeat("<p>The council met on <a href=\"https://example.org/x\">Tuesday</a> to discuss the new library budget, and agreed to extend opening hours.</p>\n", 12)
	b.Run("now", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			BodySimHash(body)
		}
	})
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			simHashBefore(body)
		}
	})
}

// FuzzBodySimHash holds BodySimHash to simHashBefore on any text, each
// repeated to reach MinSimHashWords.
func FuzzBodySimHash(f *testing.F) {
	for _, s := range []string{"a b", "<p>Ünï <b>x</b></p", "a<b", "x>y<z", "\xff\xfea\xc3", "İ ＡＢＣ x²³"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.Repeat(s+" w ", MinSimHashWords)
		got, gotOK := BodySimHash(s)
		want, wantOK := simHashBefore(s)
		if got != want || gotOK != wantOK {
			t.Errorf("BodySimHash(%q) = %016x %v, was %016x %v", s, got, gotOK, want, wantOK)
		}
	})
}
