package feeds

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"
	"github.com/wlynxg/chardet"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"
)

// sniffLimit is how much of a document the charset detector reads: enough
// text for its statistics to settle, without costing a pass over a 10 MiB
// body.
const sniffLimit = 256 << 10

// minSniffConfidence is the detector's confidence below which its guess is
// not trusted and windows-1252, the web's default for undeclared text, is
// used instead.
const minSniffConfidence = 0.2

// sniffed says how the encoding of an undeclared, non-UTF-8 document was
// guessed, for the poll's log line.
type sniffed struct {
	// Charset is the encoding the text was decoded from (its WHATWG name).
	Charset string
	// Detected is the detector's own name for what it found and Confidence
	// its confidence (0–1); empty when the detector found nothing usable.
	Detected   string
	Confidence float64
}

func (s sniffed) String() string {
	if s.Detected == "" {
		return s.Charset + " (fallback: the detector found nothing usable)"
	}
	return fmt.Sprintf("%s (detected %s, confidence %.2f)", s.Charset, s.Detected, s.Confidence)
}

// sniffDecode decodes body, which declares no encoding and is not valid
// UTF-8, with the encoding a statistical detector (a port of Python's
// chardet) finds most likely. A hand-written table of byte frequencies
// would only know the charsets its author thought of; the detector knows
// the CJK multi-byte encodings, the Cyrillic single-byte ones, Thai, Greek,
// Hebrew and the Latin ones.
func sniffDecode(body []byte) ([]byte, sniffed, error) {
	sample := body[:min(len(body), sniffLimit)]
	r := chardet.Detect(sample)
	s := sniffed{Charset: "windows-1252"}
	if r.Encoding != "" && r.Confidence >= minSniffConfidence {
		label := strings.ToLower(r.Encoding)
		if enc, name := charset.Lookup(label); enc != nil && name != "utf-8" && name != "replacement" &&
			!strings.HasPrefix(name, "utf-16") {
			out, err := enc.NewDecoder().Bytes(body)
			if err != nil {
				return nil, s, fmt.Errorf("decode %s: %w", name, err)
			}
			return out, sniffed{Charset: name, Detected: r.Encoding, Confidence: r.Confidence}, nil
		}
	}
	enc, _ := charset.Lookup("windows-1252")
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return nil, s, fmt.Errorf("decode windows-1252: %w", err)
	}
	return out, s, nil
}

// repairUTF8 returns b, which is mostly UTF-8, with each byte that is not
// part of a valid sequence read as windows-1252: such bytes are nearly
// always a Latin-1 or windows-1252 character pasted into UTF-8 text (a
// right quote, an é), and U+FFFD would lose it. A byte windows-1252 leaves
// undefined is dropped.
func repairUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			if c := cp1252(b[0]); c != 0 {
				out = utf8.AppendRune(out, c)
			}
			b = b[1:]
			continue
		}
		out = append(out, b[:size]...)
		b = b[size:]
	}
	return out
}

// cp1252 maps one byte of windows-1252 to its rune, 0 for the five bytes it
// leaves undefined.
func cp1252(c byte) rune {
	r := charmap.Windows1252.DecodeByte(c)
	if r >= 0x80 && r < 0xA0 { // the undefined bytes decode to C1 controls
		return 0
	}
	return r
}

// fixMojibake repairs text that was UTF-8, was decoded as windows-1252 (or
// Latin-1) somewhere upstream and encoded as UTF-8 again, so that "’"
// reads "â€™" and "é" reads "Ã©". Such text is valid UTF-8, so no decoder
// can notice; publishers' CMSs produce it and real feeds carry it. Each run
// of characters from the windows-1252 upper half is mapped back to its
// bytes; where those bytes hold a valid multi-byte UTF-8 sequence, the
// sequence replaces the characters it was mis-read as. A multi-byte UTF-8
// sequence never contains an ASCII byte, and real words almost never put
// "Ã" before a windows-1252 continuation character, so text that was right
// stays as it is.
func fixMojibake(s string) string {
	if !maybeMojibake(s) || !hasMojibakeRun(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	runes := []rune(s)
	for i := 0; i < len(runes); {
		if _, ok := cp1252Byte(runes[i]); !ok {
			b.WriteRune(runes[i])
			i++
			continue
		}
		// A run of characters that each stand for one byte.
		j := i
		var raw []byte
		for j < len(runes) {
			c, ok := cp1252Byte(runes[j])
			if !ok {
				break
			}
			raw = append(raw, c)
			j++
		}
		nbspAfter := raw[len(raw)-1] == 0xC2 && j < len(runes) && runes[j] == ' '
		if !mojibakeEvidence(raw) && !nbspAfter {
			// Right text whose bytes happen to form UTF-8: "doué »" is
			// é, a no-break space and » (E9 A0 BB).
			for _, r := range runes[i:j] {
				b.WriteRune(r)
			}
			i = j
			continue
		}
		// raw[k] is runes[i+k]: decode what is valid UTF-8, keep the rest.
		for k := 0; k < len(raw); {
			r, size := utf8.DecodeRune(raw[k:])
			if size > 1 && r != utf8.RuneError && raw[k] != 0xD7 {
				b.WriteRune(r)
				k += size
				continue
			}
			if nbspAfter && k == len(raw)-1 {
				// A no-break space (C2 A0) whose second byte a later step
				// turned into a plain space: "2023Â Review".
				b.WriteRune('\u00A0')
				k++
				j++
				continue
			}
			b.WriteRune(runes[i+k])
			k++
		}
		i = j
	}
	return b.String()
}

// mojibakeEvidence reports whether raw, a run of characters mapped back to
// windows-1252 bytes, holds a UTF-8 sequence that real text almost never
// shows: one with a continuation byte in 80–9F (read as € ’ “ ” – — … or
// a C1 control, as in "â€™" and "ÐŸ"), or a two-byte sequence led by Â or Ã
// ("Ã©", "Â»"). Lead byte D7 ("×") never counts: "10 × 10" is right.
func mojibakeEvidence(raw []byte) bool {
	for k := 0; k < len(raw); {
		r, size := utf8.DecodeRune(raw[k:])
		if size < 2 || r == utf8.RuneError || raw[k] == 0xD7 {
			k++
			continue
		}
		if size == 2 && (raw[k] == 0xC2 || raw[k] == 0xC3) {
			return true
		}
		for _, c := range raw[k+1 : k+size] {
			if c < 0xA0 {
				return true
			}
		}
		k += size
	}
	return false
}

// hasMojibakeRun reports whether some run of windows-1252 characters in s
// shows mojibakeEvidence (or is "Â" before a space), without copying s:
// most text with accents has none, and is returned as it is.
func hasMojibakeRun(s string) bool {
	var raw [64]byte
	run := raw[:0]
	check := func(next rune) bool {
		if len(run) == 0 {
			return false
		}
		found := mojibakeEvidence(run) || (run[len(run)-1] == 0xC2 && next == ' ')
		run = run[:0]
		return found
	}
	for _, r := range s {
		if c, ok := cp1252Byte(r); ok {
			run = append(run, c)
			continue
		}
		if check(r) {
			return true
		}
	}
	return check(0)
}

// maybeMojibake is a quick test: mis-decoded UTF-8 always holds a lead
// character from Â to ô (bytes C2–F4 read as windows-1252). In UTF-8
// those are 0xC3 followed by 0x82–0xB4, and 0xC3 always starts a
// character (it is no continuation byte), so a byte search finds them
// without decoding the text.
func maybeMojibake(s string) bool {
	for {
		i := strings.IndexByte(s, 0xC3)
		if i < 0 || i+1 >= len(s) {
			return false
		}
		if c := s[i+1]; c >= 0x82 && c <= 0xB4 {
			return true
		}
		s = s[i+1:]
	}
}

// cp1252Byte is the windows-1252 byte r was decoded from: the upper half of
// Latin-1 as itself, the 27 windows-1252 characters of 0x80–0x9F by the
// table, and a C1 control (what decoders give for the 5 undefined bytes)
// as itself. ok is false for everything else, ASCII included.
func cp1252Byte(r rune) (byte, bool) {
	switch {
	case r >= 0x80 && r <= 0xFF:
		return byte(r), true
	case r < 0x80:
		return 0, false
	}
	c, ok := cp1252High[r]
	return c, ok
}

// cp1252High maps the characters windows-1252 puts at 0x80–0x9F back to
// their bytes (the encoding's definition, not a guess).
var cp1252High = map[rune]byte{
	'€': 0x80, '‚': 0x82, 'ƒ': 0x83, '„': 0x84, '…': 0x85, '†': 0x86, '‡': 0x87, 'ˆ': 0x88,
	'‰': 0x89, 'Š': 0x8A, '‹': 0x8B, 'Œ': 0x8C, 'Ž': 0x8E, '‘': 0x91, '’': 0x92, '“': 0x93,
	'”': 0x94, '•': 0x95, '–': 0x96, '—': 0x97, '˜': 0x98, '™': 0x99, 'š': 0x9A, '›': 0x9B,
	'œ': 0x9C, 'ž': 0x9E, 'Ÿ': 0x9F,
}

// fixFeedText repairs mis-decoded text in the fields readers see: the
// feed's and every item's title, description and content.
func fixFeedText(feed *gofeed.Feed) {
	if feed == nil {
		return
	}
	feed.Title = fixMojibake(feed.Title)
	feed.Description = fixMojibake(feed.Description)
	for _, it := range feed.Items {
		if it == nil {
			continue
		}
		it.Title = fixMojibake(it.Title)
		it.Description = fixMojibake(it.Description)
		it.Content = fixMojibake(it.Content)
	}
}
