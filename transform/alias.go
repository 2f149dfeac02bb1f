package transform

import (
	"iter"
	"math/bits"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Alias fingerprints: the forms under which a story may come back with a
// new identity (package publish matches them before posting; see the
// README's "Reposts"). They are computed only for items the store does not
// know, so a poll with nothing new pays nothing for them.

// AliasURL is the repost-matching form of a link or GUID: scheme dropped,
// host lower-cased without a leading "www." or "m.", default ports, user
// info, fragment and tracking parameters removed, the remaining query
// sorted, "index.html" (and friends), a trailing slash and an AMP form
// ("/amp", "/amp/...", "?amp=1", "?outputType=amp") reduced to the
// canonical page. It is "" when raw is not an absolute http(s) URL.
func AliasURL(raw string) string {
	u := canonicalURL(raw, nil)
	if u == nil {
		return ""
	}
	host := u.Host
	for _, p := range []string{"www.", "m.", "amp."} {
		if h, ok := strings.CutPrefix(host, p); ok && strings.Contains(h, ".") {
			host = h
			break
		}
	}
	path := u.EscapedPath()
	path = strings.TrimPrefix(path, "/amp/")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	for {
		before := path
		path = strings.TrimRight(path, "/")
		for _, s := range []string{"/index.html", "/index.htm", "/index.php", "/amp", "/amp.html"} {
			path = strings.TrimSuffix(path, s)
		}
		if path == before {
			break
		}
	}
	q := u.Query()
	for k := range q {
		if lk := strings.ToLower(k); isTrackingParam(lk) || lk == "amp" || (lk == "outputtype" && strings.EqualFold(q.Get(k), "amp")) {
			q.Del(k)
		}
	}
	s := host + path
	if enc := q.Encode(); enc != "" { // Encode sorts by key
		s += "?" + enc
	}
	return s
}

// AliasGUID is the repost-matching form of a GUID: AliasURL when it is a
// URL (WordPress GUIDs are "http://site/?p=123", which follow the site to
// https), otherwise the GUID trimmed. "" when there is none.
func AliasGUID(guid string) string {
	guid = strings.TrimSpace(guid)
	if guid == "" {
		return ""
	}
	if u, err := url.Parse(guid); err == nil && u.IsAbs() && isHTTP(u) {
		if a := AliasURL(guid); a != "" {
			return a
		}
	}
	return guid
}

// TitleDay is the title-and-day fingerprint: the title folded to lower-case
// letters and digits separated by single spaces, and the publication day in
// UTC. "" when the item has no title or no date (no date, no day to agree
// on: such items never match by text).
func TitleDay(title string, published time.Time) string {
	if published.IsZero() {
		return ""
	}
	t := strings.Join(words(plainText(title)), " ")
	if t == "" {
		return ""
	}
	return t + "|" + published.UTC().Format(time.DateOnly)
}

// MinSimHashWords is the least number of words a body needs to take part in
// text matching: shorter bodies are boilerplate ("Listen to the episode",
// "Photo of the day") that distinct items share.
const MinSimHashWords = 40

// BodySimHash is a 64-bit SimHash over the word 3-shingles of the body's
// text; ok is false when the body has fewer than MinSimHashWords words.
// Near-identical texts differ in few bits (see SimHashDistance). Tags are
// skipped by a byte scan rather than parsed: this runs for every new item,
// and what it must be is the same for the same text, not exact.
func BodySimHash(bodyHTML string) (h uint64, ok bool) {
	// The shingles are hashed as the words come, without a slice of them:
	// this runs for every new item. Bit b of the SimHash is set when more
	// than half the shingles' hashes have it: the set bits are counted
	// eight positions at a time, lane k of lanes[j] counting bit 8k+j,
	// and the lanes (a byte each) emptied into ones before they can reach
	// 256.
	var ones [64]int32
	var lanes [8]uint64
	var w0, w1 uint64
	n, pending := 0, 0
	flush := func() {
		for j, l := range lanes {
			for k := range 8 {
				ones[8*k+j] += int32(l >> (8 * k) & 0xff)
			}
			lanes[j] = 0
		}
		pending = 0
	}
	for w := range wordHashes(bodyHTML) {
		if n >= 2 {
			x := mix64(w0*0x9e3779b97f4a7c15 ^ bits.RotateLeft64(w1, 21) ^ bits.RotateLeft64(w, 42))
			for j := range lanes {
				lanes[j] += x >> j & 0x0101010101010101
			}
			if pending++; pending == 255 {
				flush()
			}
		}
		w0, w1 = w1, w
		n++
	}
	if n < MinSimHashWords {
		return 0, false
	}
	flush()
	shingles := int32(n - 2)
	for b := range 64 {
		if 2*ones[b] > shingles {
			h |= 1 << b
		}
	}
	return h, true
}

// wordHashes yields the hashes of the lower-cased runs of letters and
// digits of an HTML fragment's text, skipping tags. ASCII, most of any
// text, is read a byte at a time without the unicode tables (same
// answers), and a tag is skipped by one search for its '>' (a byte no
// multi-byte or invalid sequence swallows, so ranging over the runes
// would end the tag at the same place).
func wordHashes(s string) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		const offset, prime = 14695981039346656037, 1099511628211
		h, in := uint64(offset), false
		for i := 0; i < len(s); {
			if c := s[i]; c < utf8.RuneSelf {
				i++
				switch {
				case c == '<':
					if j := strings.IndexByte(s[i:], '>'); j >= 0 {
						i += j + 1
					} else {
						i = len(s)
					}
				case 'A' <= c && c <= 'Z':
					c += 'a' - 'A'
					fallthrough
				case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
					h = (h ^ uint64(c)) * prime
					in = true
					continue
				}
			} else {
				r, size := utf8.DecodeRuneInString(s[i:])
				i += size
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					h = (h ^ uint64(unicode.ToLower(r))) * prime
					in = true
					continue
				}
			}
			if in {
				if !yield(h) {
					return
				}
				h, in = offset, false
			}
		}
		if in {
			yield(h)
		}
	}
}

// mix64 is a 64-bit finaliser (splitmix64), spreading a shingle's hash
// over every bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// SimHashDistance is the number of bits two SimHashes differ in.
func SimHashDistance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// words splits text into lower-case runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// As returns a copy of p under another item's identity (feed id and
// external id) with its hash recomputed: what a repost of that item sends
// to it, and whose hash tells whether the repost changed anything.
func (p *Payload) As(feedID, externalID string) Payload {
	c := *p
	c.FeedID, c.ExternalID = feedID, externalID
	c.Hash = c.computeHash()
	return c
}

// TitleKey is a title folded to lower-case letters and digits separated by
// single spaces, at most 120 bytes: what TitleSimilar compares.
func TitleKey(title string) string {
	t := strings.Join(words(plainText(title)), " ")
	if len(t) > 120 {
		t = t[:120]
	}
	return t
}

// TitleSimilar reports whether two title keys share at least half of
// their words (Jaccard index of the word sets >= 0.5): an edited title
// ("Council approves budget" -> "Council approves 2025 budget") still
// agrees, another story's does not.
func TitleSimilar(a, b string) bool {
	wa, wb := strings.Fields(a), strings.Fields(b)
	if len(wa) == 0 || len(wb) == 0 {
		return false
	}
	set := make(map[string]int, len(wa))
	for _, w := range wa {
		set[w] = 1
	}
	inter, union := 0, len(set)
	for _, w := range wb {
		switch set[w] {
		case 1:
			inter++
			set[w] = 2
		case 0:
			union++
			set[w] = 3
		}
	}
	return 2*inter >= union
}
