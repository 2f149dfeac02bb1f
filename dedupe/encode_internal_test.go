package dedupe

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The record and outbox-meta encodings are shared with the Redis scripts
// and written in every existing store: these pin them to the formats
// they had when they were built with strings.Join and fmt.Sprintf.

func oldRecordEncoding(r Record) string {
	cid, st := "", ""
	if r.ContentID != 0 {
		cid = strconv.FormatInt(r.ContentID, 10)
	}
	if r.State != StateActive {
		st = string(rune(r.State))
	}
	ms := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatInt(t.UnixMilli(), 10)
	}
	return strings.Join([]string{"1", r.Hash, r.PublishedHash, cid, r.Type, ms(r.FirstSeen), ms(r.LastPublished), r.PendingHash, st}, "|")
}

func randomRecord(rng *rand.Rand) Record {
	str := func() string {
		const chars = "abcdef0123456789|é"
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	at := func() time.Time {
		if rng.IntN(3) == 0 {
			return time.Time{}
		}
		return time.UnixMilli(rng.Int64N(4e12) - 1e12)
	}
	r := Record{Hash: str(), PublishedHash: str(), Type: str(), PendingHash: str(), FirstSeen: at(), LastPublished: at()}
	if rng.IntN(2) == 0 {
		r.ContentID = rng.Int64() - rng.Int64()
	}
	r.State = State(rng.IntN(256))
	if rng.IntN(2) == 0 {
		r.State = StateActive
	}
	return r
}

func TestRecordEncodingUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		r := randomRecord(rng)
		if got, want := string(r.appendTo(nil)), oldRecordEncoding(r); got != want {
			t.Fatalf("%+v: encoded %q, was %q", r, got, want)
		}
		// Fields without "|" read back as they were written.
		if strings.Contains(r.Hash+r.PublishedHash+r.Type+r.PendingHash, "|") {
			continue
		}
		back, err := parseRecord(string(r.appendTo(nil)))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if back.Hash != r.Hash || back.PublishedHash != r.PublishedHash || back.Type != r.Type || back.PendingHash != r.PendingHash ||
			back.ContentID != r.ContentID || !back.FirstSeen.Equal(r.FirstSeen) || !back.LastPublished.Equal(r.LastPublished) {
			t.Fatalf("%+v read back as %+v", r, back)
		}
	}
}

func TestMetaEncodingUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		m := meta{attempts: rng.IntN(1000) - 5, enqueued: rng.Int64() - rng.Int64(), hash: strconv.Itoa(rng.Int()), status: rng.IntN(600), reason: strings.Repeat("x|y ", rng.IntN(4))}
		want := fmt.Sprintf("%d|%d|%s|%d|%s", m.attempts, m.enqueued, m.hash, m.status, m.reason)
		if got := string(m.encode()); got != want {
			t.Fatalf("%+v: encoded %q, was %q", m, got, want)
		}
		back, err := parseMeta(want)
		if err != nil || back != m {
			t.Fatalf("%q read back as %+v, %v", want, back, err)
		}
	}
}

func TestSplitFieldsIsSplitN(t *testing.T) {
	for _, s := range []string{"", "|", "a", "a|b", "a|b|c", "a||", "|||||", "1|h|p|7|story|1|2|ph|d|extra|more", "é|ü"} {
		for n := 1; n <= 9; n++ {
			f := make([]string, n)
			ok := splitFields(s, f)
			want := strings.SplitN(s, "|", n)
			if ok != (len(want) == n) {
				t.Fatalf("splitFields(%q, %d) = %v, SplitN gave %d fields", s, n, ok, len(want))
			}
			if ok && strings.Join(f, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("splitFields(%q, %d) = %q, SplitN %q", s, n, f, want)
			}
		}
	}
}
