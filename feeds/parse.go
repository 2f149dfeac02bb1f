package feeds

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/rss"
	"golang.org/x/net/html/charset"
)

// Parse decodes a feed document (RSS 0.9x/1.0/2.0, Atom 0.3/1.0 or JSON
// Feed) with gofeed. contentType is the HTTP Content-Type, if any; its charset
// is used when the document does not declare one. Before gofeed sees them the
// bytes are normalised the way real servers need: a gzip body sent without
// Content-Encoding is decompressed (at most http.max_body_size's default), byte order
// marks and UTF-16/UTF-32 are handled, legacy charsets are converted to UTF-8,
// characters XML forbids are removed and the prolog is tidied so the root
// element can be found. An undeclared non-UTF-8 document is decoded with
// the charset a detector guesses; JSON Feed is read leniently (see
// normalizeJSONFeed); an XML document that ends early yields the items
// complete before the cut (Fetcher.Fetch reports that in Result.Partial).
// An RSS item's Image is set only from itunes:image, Media RSS and image
// enclosures: gofeed's scan of the item's HTML for a first <img> is off
// (transform makes that pick from its own parse of the HTML).
// Any failure, including a panic inside the parser, is a *ParseError.
func Parse(body []byte, contentType string) (*gofeed.Feed, error) {
	feed, _, err := parse(body, contentType, defaultMaxBody())
	return feed, err
}

// parseInfo is what parsing learned besides the feed.
type parseInfo struct {
	// Partial is why the document is incomplete (it ended early, or broke
	// off at a syntax error); nil for a whole document. The feed then holds
	// the items that were complete before the cut.
	Partial error
	// Sniffed is set when the encoding was guessed by the detector.
	Sniffed *sniffed
}

func parse(body []byte, contentType string, maxSize int64) (feed *gofeed.Feed, info parseInfo, err error) {
	defer func() {
		// gofeed has panicked on hostile input before; one bad feed must not
		// take the worker down with it.
		if r := recover(); r != nil {
			feed, err = nil, &ParseError{Err: fmt.Errorf("parser panic: %v", r)}
		}
	}()
	doc, isJSON, sniff, err := normalize(body, contentType, maxSize)
	if err != nil {
		return nil, info, err
	}
	info.Sniffed = sniff
	if isJSON {
		if doc, err = normalizeJSONFeed(doc); err != nil {
			return nil, info, &ParseError{Err: err}
		}
	}
	p := newParser()
	if !isJSON {
		// The same feed, cheaper to parse (see liftText); any error is the
		// original document's to report.
		if f := parseLifted(doc, p); f != nil {
			fixFeedText(f)
			return f, info, nil
		}
	}
	feed, err = p.Parse(bytes.NewReader(doc))
	if err != nil && errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
		// Some servers wrap their Atom feed in an XHTML page; when the page
		// holds exactly one Atom feed element, that is the feed.
		if inner := embeddedAtom(doc); inner != nil {
			if f, ierr := p.Parse(bytes.NewReader(inner)); ierr == nil {
				fixFeedText(f)
				return f, info, nil
			}
		}
		err = notAFeed(doc)
	} else if err != nil && !isJSON {
		// A document that ends early still holds the items before the cut.
		if cut, cause, ok := cutPartial(doc); ok {
			if f, perr := p.Parse(bytes.NewReader(cut)); perr == nil {
				info.Partial = cause
				fixFeedText(f)
				return f, info, nil
			}
		}
	}
	if err != nil {
		return nil, info, &ParseError{Err: err}
	}
	fixFeedText(feed)
	return feed, info, nil
}

// newParser is gofeed's parser as parse uses it.
func newParser() *gofeed.Parser {
	p := gofeed.NewParser()
	// The original RSS feed carries <ttl>, which the universal Feed drops.
	p.KeepOriginalFeed = true
	// gofeed would parse every RSS item's content and description as HTML
	// only to find a first <img> for Item.Image; transform parses them
	// anyway and makes the same pick from its own tree (firstImg in
	// transform/html.go), so Item.Image is left to the explicit sources
	// (itunes:image, Media RSS, image enclosures).
	p.RSSTranslator = &gofeed.DefaultRSSTranslator{DisableContentImageScan: true}
	return p
}

// embeddedAtom returns the one Atom <feed> element of an (X)HTML page, or
// nil when there is none or more than one.
func embeddedAtom(doc []byte) []byte {
	const ns = `xmlns="http://www.w3.org/2005/Atom"`
	start := bytes.Index(doc, []byte("<feed "))
	if start < 0 || bytes.LastIndex(doc, []byte("<feed ")) != start {
		return nil
	}
	tagEnd := bytes.IndexByte(doc[start:], '>')
	if tagEnd < 0 || !bytes.Contains(doc[start:start+tagEnd], []byte(ns)) {
		return nil
	}
	end := bytes.LastIndex(doc, []byte("</feed>"))
	if end < start {
		return nil
	}
	return doc[start : end+len("</feed>")]
}

// notAFeed explains why gofeed found no feed, naming what was found instead.
func notAFeed(doc []byte) error {
	start := bytes.TrimLeft(doc, " \t\r\n")
	if len(start) == 0 {
		return errors.New("empty document")
	}
	if start[0] == '<' {
		name := start[1:]
		if i := bytes.IndexAny(name, " \t\r\n/>"); i >= 0 {
			name = name[:i]
		}
		if len(name) > 40 {
			name = name[:40]
		}
		lower := strings.ToLower(string(name))
		if lower == "html" || lower == "!doctype" || lower == "head" || lower == "body" {
			return errors.New("document is HTML, not a feed")
		}
		return fmt.Errorf("root element <%s> is not rss, rdf:RDF or feed", name)
	}
	return errors.New("document is neither XML nor JSON")
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	bomUTF8   = []byte{0xEF, 0xBB, 0xBF}
)

// normalize turns body into UTF-8 XML (or JSON) without a declaration that
// could make the XML decoder convert it a second time.
func normalize(body []byte, contentType string, maxSize int64) (doc []byte, isJSON bool, sniff *sniffed, err error) {
	if bytes.HasPrefix(body, gzipMagic) {
		// Some servers store feeds gzipped and send them without
		// Content-Encoding; the magic number cannot start a text document.
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, false, nil, &ParseError{Err: fmt.Errorf("gzip body: %w", err)}
		}
		body, err = readCapped(nil, zr, maxSize, 0)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, false, nil, fmt.Errorf("decompressed gzip body: %w", err)
			}
			return nil, false, nil, &ParseError{Err: fmt.Errorf("gzip body: %w", err)}
		}
	}

	text, sniff, err := toUTF8(body, contentType)
	if err != nil {
		return nil, false, nil, &ParseError{Err: err}
	}
	text = bytes.TrimLeft(text, " \t\r\n")
	if len(text) == 0 {
		return nil, false, nil, &ParseError{Err: errors.New("empty document")}
	}
	if text[0] == '{' {
		return text, true, sniff, nil
	}
	return sanitizeXML(tidyProlog(text)), false, sniff, nil
}

// toUTF8 returns body as UTF-8 text without a byte order mark. The order of
// evidence: a BOM or the zero-byte pattern of UTF-16/32, then the encoding in
// the XML declaration, then the Content-Type charset. A body that is valid
// UTF-8 is taken as UTF-8 whatever an ASCII-compatible label claims, because
// mislabelled UTF-8 is far more common than Latin-1 text that happens to
// form valid UTF-8 sequences. When the encoding had to be guessed, sniff
// says how.
func toUTF8(body []byte, contentType string) (text []byte, sniff *sniffed, err error) {
	if wide, ok := decodeWide(body); ok {
		return wide, nil, nil
	}
	body = bytes.TrimPrefix(body, bomUTF8)

	declared, header := declaredEncoding(body), ""
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		header = strings.ToLower(strings.TrimSpace(params["charset"]))
	}
	label := cmp.Or(declared, header)
	sevenBit := strings.HasPrefix(label, "iso-2022") || label == "utf-7" || label == "hz-gb-2312"
	if utf8.Valid(body) && !sevenBit {
		return body, nil, nil
	}
	for _, l := range []string{declared, header} {
		if l == "" || isUTF8Label(l) {
			continue
		}
		// UTF-16 without a BOM or zero bytes is a stale declaration on a
		// document that was converted to something else; try the next label.
		if enc, name := charset.Lookup(l); enc != nil && name != "utf-8" && name != "replacement" &&
			!strings.HasPrefix(name, "utf-16") {
			out, err := enc.NewDecoder().Bytes(body)
			if err != nil {
				return nil, nil, fmt.Errorf("decode %s: %w", name, err)
			}
			return out, nil, nil
		}
	}
	// Declared (or assumed) UTF-8 but not valid. A document made mostly of
	// valid multi-byte sequences is UTF-8 with a few stray bytes. Otherwise
	// the encoding is undeclared (or the declaration is wrong): guess it.
	if valid, invalid := utf8Balance(body); valid >= 2*invalid {
		return repairUTF8(body), nil, nil
	}
	out, s, err := sniffDecode(body)
	if err != nil {
		return nil, nil, err
	}
	return out, &s, nil
}

func isUTF8Label(l string) bool { return l == "utf-8" || l == "utf8" || l == "unicode-1-1-utf-8" }

// utf8Balance counts the valid multi-byte UTF-8 sequences and the bytes that
// are not valid UTF-8 in b.
func utf8Balance(b []byte) (valid, invalid int) {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size == 1:
			invalid++
		case size > 1:
			valid++
		}
		b = b[size:]
	}
	return valid, invalid
}

// decodeWide recognises UTF-16 and UTF-32 by their byte order mark or, without
// one, by the zero bytes around the first ASCII character (XML 1.0 appendix F;
// JSON's first character is ASCII too).
func decodeWide(b []byte) ([]byte, bool) {
	if len(b) < 2 {
		return nil, false
	}
	var four [4]byte
	copy(four[:], b)
	switch {
	case four == [4]byte{0x00, 0x00, 0xFE, 0xFF}:
		return decodeUTF32(b[4:], true), true
	case four == [4]byte{0xFF, 0xFE, 0x00, 0x00}:
		return decodeUTF32(b[4:], false), true
	case four[0] == 0xFE && four[1] == 0xFF:
		return decodeUTF16(b[2:], true), true
	case four[0] == 0xFF && four[1] == 0xFE:
		return decodeUTF16(b[2:], false), true
	case len(b) >= 4 && four[0] == 0 && four[1] == 0 && four[2] == 0 && four[3] != 0:
		return decodeUTF32(b, true), true
	case len(b) >= 4 && four[0] != 0 && four[1] == 0 && four[2] == 0 && four[3] == 0:
		return decodeUTF32(b, false), true
	case four[0] == 0 && four[1] != 0:
		return decodeUTF16(b, true), true
	case four[0] != 0 && four[1] == 0:
		return decodeUTF16(b, false), true
	}
	return nil, false
}

func decodeUTF16(b []byte, bigEndian bool) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i+1 < len(b); i += 2 {
		u := rune(b[i])<<8 | rune(b[i+1])
		if !bigEndian {
			u = rune(b[i+1])<<8 | rune(b[i])
		}
		if u >= 0xD800 && u < 0xDC00 && i+3 < len(b) {
			lo := rune(b[i+2])<<8 | rune(b[i+3])
			if !bigEndian {
				lo = rune(b[i+3])<<8 | rune(b[i+2])
			}
			if lo >= 0xDC00 && lo < 0xE000 {
				out = utf8.AppendRune(out, 0x10000+(u-0xD800)<<10+(lo-0xDC00))
				i += 2
				continue
			}
		}
		// A lone surrogate becomes U+FFFD through AppendRune.
		out = utf8.AppendRune(out, u)
	}
	return out
}

func decodeUTF32(b []byte, bigEndian bool) []byte {
	out := make([]byte, 0, len(b)/2)
	for i := 0; i+3 < len(b); i += 4 {
		var r rune
		if bigEndian {
			r = rune(b[i])<<24 | rune(b[i+1])<<16 | rune(b[i+2])<<8 | rune(b[i+3])
		} else {
			r = rune(b[i+3])<<24 | rune(b[i+2])<<16 | rune(b[i+1])<<8 | rune(b[i])
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

// xmlDecl finds the XML declaration in the prolog (it may follow comments in
// broken documents) and returns its bounds, or -1.
func xmlDecl(b []byte) (start, end int) {
	limit := b
	if len(limit) > 64<<10 {
		limit = limit[:64<<10]
	}
	i := 0
	for i < len(limit) {
		switch {
		case isSpace(limit[i]):
			i++
		case bytes.HasPrefix(limit[i:], []byte("<!--")):
			j := bytes.Index(limit[i+4:], []byte("-->"))
			if j < 0 {
				return -1, -1
			}
			i += 4 + j + 3
		case bytes.HasPrefix(limit[i:], []byte("<?")):
			j := bytes.Index(limit[i:], []byte("?>"))
			if j < 0 {
				return -1, -1
			}
			if bytes.HasPrefix(limit[i:], []byte("<?xml")) && len(limit) > i+5 && isSpace(limit[i+5]) {
				return i, i + j + 2
			}
			i += j + 2
		default:
			return -1, -1
		}
	}
	return -1, -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// declaredEncoding returns the lower-cased encoding of the XML declaration.
func declaredEncoding(b []byte) string {
	s, e := xmlDecl(b)
	if s < 0 {
		return ""
	}
	decl := string(b[s:e])
	i := strings.Index(decl, "encoding")
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(decl[i+len("encoding"):], " \t\r\n")
	rest, ok := strings.CutPrefix(rest, "=")
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, " \t\r\n")
	if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
		return ""
	}
	q := rest[0]
	j := strings.IndexByte(rest[1:], q)
	if j < 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(rest[1 : 1+j]))
}

// tidyProlog removes comments, processing instructions and the XML
// declaration before the root element. The text is UTF-8 now, so a declared
// encoding would make the decoder convert it again; a comment before the
// declaration is a fatal error for it; and gofeed only looks at the first
// 4 KiB for the root element, which long generator comments can push out.
// DOCTYPE stays: its internal subset may declare entities the feed uses.
func tidyProlog(b []byte) []byte {
	i := 0
	for i < len(b) {
		switch {
		case isSpace(b[i]):
			i++
		case bytes.HasPrefix(b[i:], []byte("<!--")):
			j := bytes.Index(b[i+4:], []byte("-->"))
			if j < 0 {
				return b[i:]
			}
			i += 4 + j + 3
		case bytes.HasPrefix(b[i:], []byte("<?")):
			j := bytes.Index(b[i:], []byte("?>"))
			if j < 0 {
				return b[i:]
			}
			i += j + 2
		default:
			return b[i:]
		}
	}
	return b[i:]
}

// sanitizeXML drops the characters XML 1.0 forbids (C0 controls other than
// tab, CR and LF; U+FFFE and U+FFFF), raw or written as numeric character
// references, which Go's decoder rejects outright and which real feeds carry
// from copy-pasted text. It copies only when there is something to drop.
func sanitizeXML(b []byte) []byte {
	if !needsSanitizing(b) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			i++
			continue
		}
		if c == 0xEF && i+2 < len(b) && b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF) {
			i += 3
			continue
		}
		if c == '&' && i+2 < len(b) && b[i+1] == '#' {
			if n, ok := charRef(b[i:]); ok {
				if r, err := refValue(b[i+2 : i+n-1]); err == nil && !xmlChar(r) {
					i += n
					continue
				}
			}
		}
		out = append(out, c)
		i++
	}
	return out
}

// needsSanitizing reports whether sanitizeXML has anything to drop. It
// reads every feed whole, so it passes over eight bytes at a time when
// none of them is one it must look at.
func needsSanitizing(b []byte) bool {
	for i := 0; i < len(b); {
		if i+8 <= len(b) && !suspect8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
			continue
		}
		for end := min(i+8, len(b)); i < end; i++ {
			switch c := b[i]; {
			case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
				return true
			case c == 0xEF && i+2 < len(b) && b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF):
				return true
			case c == '#' && i > 0 && b[i-1] == '&':
				if n, ok := charRef(b[i-1:]); ok {
					if r, err := refValue(b[i+1 : i+n-2]); err == nil && !xmlChar(r) {
						return true
					}
				}
			}
		}
	}
	return false
}

// suspect8 reports whether any of the eight bytes in w needs a look: a
// control character other than tab, LF and CR, 0xEF (the first byte of
// U+FFFE and U+FFFF), or '#' (of a reference "&#"). Each byte's test is
// exact: no carry crosses a byte.
func suspect8(w uint64) bool {
	const highs, lows, ones = 0x8080808080808080, 0x7f7f7f7f7f7f7f7f, 0x0101010101010101
	// For y, (y&lows + lows) | y has the high bit of each non-zero byte.
	t, n, r := w^ones*'\t', w^ones*'\n', w^ones*'\r'
	e, h := w^ones*0xEF, w^ones*'#'
	nonzero := (t&lows + lows | t) & (n&lows + lows | n) & (r&lows + lows | r)
	below := ^(w&lows + ones*(0x80-0x20) | w)
	return (below&nonzero|^(e&lows+lows|e)|^(h&lows+lows|h))&highs != 0
}

// charRef returns the length of the "&#...;" reference at the start of b.
func charRef(b []byte) (int, bool) {
	const maxLen = 12
	for j := 2; j < len(b) && j < maxLen; j++ {
		if b[j] == ';' {
			return j + 1, j > 2
		}
	}
	return 0, false
}

func refValue(s []byte) (rune, error) {
	base, digits := 10, string(s)
	if len(s) > 0 && (s[0] == 'x' || s[0] == 'X') {
		base, digits = 16, string(s[1:])
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, err
	}
	return rune(n), nil
}

// xmlChar is the Char production of XML 1.0.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// readCapped reads r fully, returning ErrTooLarge if it holds more than max
// bytes. It never reads more than max+1 bytes. size is the length r is
// expected to hold (a Content-Length; 0 when unknown): the buffer starts
// there, one byte over to see the end, instead of growing by doubling from
// 512 bytes (the copies were 3% of a first pass's allocation). buf is
// memory to read into, used when it has room for size (its length is
// ignored); nil for new memory.
func readCapped(buf []byte, r io.Reader, max, size int64) ([]byte, error) {
	r = io.LimitReader(r, max+1)
	b := buf[:0]
	switch {
	case size > 0 && size <= max && int64(cap(b)) <= size:
		b = make([]byte, 0, size+1) // +1: the read that finds the end
	case cap(b) == 0:
		b = make([]byte, 0, 512) // as io.ReadAll starts
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // full: a body longer than announced, or of no announced size
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, err
		}
	}
	if int64(len(b)) > max {
		return nil, ErrTooLarge
	}
	return b, nil
}

// feedHint is the poll interval the document asks for: RSS <ttl> in minutes.
func feedHint(feed *gofeed.Feed) time.Duration {
	if feed == nil {
		return 0
	}
	orig, ok := feed.OriginalFeed().(*rss.Feed)
	if !ok || orig == nil {
		return 0
	}
	minutes, err := strconv.Atoi(strings.TrimSpace(orig.TTL))
	if err != nil || minutes <= 0 {
		return 0
	}
	// A ttl of years is a typo or a joke; the schedule's ceiling caps it anyway,
	// this only keeps the multiplication from overflowing.
	minutes = min(minutes, 366*24*60)
	return time.Duration(minutes) * time.Minute
}
