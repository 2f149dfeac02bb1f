package feeds

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/rss"
)

// liftMark starts and ends a marker: U+E000, a private-use character.
const liftMark = "\uE000"

// liftMin is the shortest text worth lifting.
const liftMin = 64

// lifted is a text taken out of a document.
type lifted struct {
	field liftField
	item  int // the item's index in the channel
	text  string
}

type liftField uint8

const (
	channelDescription liftField = iota + 1
	itemDescription
	itemContent
)

// The HTML of an RSS item is most of the document's bytes, and gofeed's
// reading of it most of the parse: encoding/xml goes through it a byte at
// a time, decoding every entity while it records the element's inner XML,
// and gofeed then decodes the inner XML again, one html.UnescapeString
// call per entity. liftText takes the text of the channel's and the
// items' <description> and <content:encoded> elements out of the
// document before gofeed sees it, leaving a short marker in each, and
// restore puts the text, decoded as gofeed would have decoded it, where
// gofeed put each marker. Only text whose reading is certain is lifted:
//
//   - elements without attributes, children of the channel or of an
//     item, found by a scan that skips comments, CDATA sections,
//     processing instructions and quoted attribute values as encoding/xml
//     does (a document with a DOCTYPE or another <! declaration, or not
//     properly nested, is left alone);
//   - whose content, white space around it aside, is one CDATA section
//     (gofeed takes it as it is) or text whose every '&' starts one of the
//     five predefined entities or a character reference of a printable
//     character (which gofeed's DecodeEntities decodes as encoding/xml
//     does), holding no "]]>" (an error for encoding/xml) and not empty
//     (gofeed then falls back to other elements).
//
// restore checks that every marker is exactly where the element's text
// goes (shared.ParseText into rss.Item's Description or Content, copied to
// gofeed.Item's, or the channel's Description): a marker found anywhere
// else, or overwritten by a later element of the same name, and parse reads
// the original document instead. A document holding the markers' U+E000,
// as it is or as a character reference (one ending "e000;", "E000;" or
// "57344;", leading zeros or not), is left alone, so no marker can come
// from the document itself.
// TestLiftTextDocuments (the corpus) and FuzzLiftText hold the result
// equal to gofeed's reading of the original document.
//
// liftText returns doc with the texts it lifts replaced by markers, and
// the texts in the markers' order; nil when it lifts nothing.
func liftText(doc []byte) ([]byte, []lifted) {
	if !bytes.HasPrefix(doc, []byte("<rss")) || len(doc) < 5 || (doc[4] != '>' && !isSpace(doc[4])) ||
		holdsLiftMark(doc) {
		return nil, nil
	}
	var (
		out     []byte
		texts   []lifted
		scratch []byte
		openBuf [8][]byte
	)
	last := 0           // doc[:last] is in out already
	open := openBuf[:0] // the names of the elements open at i
	items, channels := 0, 0
	for i := 0; ; {
		j := bytes.IndexByte(doc[i:], '<')
		if j < 0 {
			break
		}
		pos := i + j
		rest := doc[pos:]
		if skip := skipMarkup(rest); skip != 0 {
			if skip < 0 {
				return nil, nil
			}
			i = pos + skip
			continue
		}
		end := tagEnd(rest)
		if end < 0 {
			return nil, nil
		}
		i = pos + end + 1
		tag := rest[:end+1]
		if tag[1] == '/' {
			name := tagName(tag[2:])
			if len(open) == 0 || !bytes.Equal(open[len(open)-1], name) {
				return nil, nil // not properly nested: leave the document alone
			}
			open = open[:len(open)-1]
			continue
		}
		name := tagName(tag[1:])
		parent := open
		if tag[len(tag)-2] != '/' {
			if len(open) == maxLiftDepth {
				return nil, nil
			}
			open = append(open, name)
		}
		// gofeed matches element names case-insensitively; this scan
		// follows the lower-case ones only.
		if (len(name) == 4 || len(name) == 7) && (bytes.EqualFold(name, []byte("item")) || bytes.EqualFold(name, []byte("channel"))) {
			switch {
			case string(name) == "channel" && len(parent) == 1 && channels == 0:
				channels++
			case string(name) == "item" && len(parent) == 2 && string(parent[1]) == "channel":
				items++
			default:
				return nil, nil
			}
			continue
		}
		field, endTag := liftable(tag, parent)
		if field == 0 {
			continue
		}
		k := bytes.Index(doc[i:], endTag)
		if k < 0 {
			continue
		}
		text, ok := liftedValue(bytes.TrimSpace(doc[i:i+k]), &scratch)
		if !ok {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(doc)/4)
		}
		out = append(out, doc[last:i]...)
		out = append(out, liftMark...)
		out = strconv.AppendInt(out, int64(len(texts)), 10)
		out = append(out, liftMark...)
		last = i + k
		i += k
		texts = append(texts, lifted{field: field, item: items - 1, text: text})
	}
	if len(texts) == 0 {
		return nil, nil
	}
	return append(out, doc[last:]...), texts
}

// skipMarkup returns the length of the comment, CDATA section or
// processing instruction b starts with, 0 when b starts a tag, and -1
// for anything else (a declaration, or markup that does not end).
func skipMarkup(b []byte) int {
	for _, m := range [...]struct{ open, close string }{{"<!--", "-->"}, {"<![CDATA[", "]]>"}, {"<?", "?>"}} {
		if bytes.HasPrefix(b, []byte(m.open)) {
			k := bytes.Index(b[len(m.open):], []byte(m.close))
			if k < 0 {
				return -1
			}
			return len(m.open) + k + len(m.close)
		}
	}
	if bytes.HasPrefix(b, []byte("<!")) {
		return -1
	}
	return 0
}

// maxLiftDepth is the deepest nesting liftText follows.
const maxLiftDepth = 64

// tagName is the name a start or end tag's text after '<' or '</' begins
// with.
func tagName(b []byte) []byte {
	if k := bytes.IndexAny(b, " \t\r\n/>"); k >= 0 {
		return b[:k]
	}
	return b
}

// tagEnd returns the index of the '>' that ends the tag tag starts with,
// skipping quoted attribute values (which may hold '>'), or -1. A '<'
// outside quotes is an error for encoding/xml, and so -1 here.
func tagEnd(tag []byte) int {
	var quote byte
	for k := 1; k < len(tag); k++ {
		c := tag[k]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return k
		case c == '<':
			return -1
		}
	}
	return -1
}

// liftable returns the field a start tag's text goes to and the element's
// end tag, when liftText lifts it: a <description> of the channel or of an
// item, or an item's <content:encoded>, without attributes.
func liftable(tag []byte, parent [][]byte) (liftField, []byte) {
	inChannel := len(parent) == 2 && string(parent[0]) == "rss" && string(parent[1]) == "channel"
	inItem := len(parent) == 3 && string(parent[0]) == "rss" && string(parent[1]) == "channel" && string(parent[2]) == "item"
	switch {
	case string(tag) == "<description>" && inChannel:
		return channelDescription, []byte("</description>")
	case string(tag) == "<description>" && inItem:
		return itemDescription, []byte("</description>")
	case string(tag) == "<content:encoded>" && inItem:
		return itemContent, []byte("</content:encoded>")
	}
	return 0, nil
}

// liftedValue returns what gofeed's shared.ParseText reads from an
// element whose content, trimmed of white space, is core, when it is
// certain of it (see liftText): the content of a lone CDATA section, or
// text with its references decoded.
func liftedValue(core []byte, scratch *[]byte) (string, bool) {
	if len(core) < liftMin || !utf8.Valid(core) || hasControl(core) ||
		bytes.Contains(core, []byte("\uFFFE")) || bytes.Contains(core, []byte("\uFFFF")) {
		// gofeed drops control characters from the stream, and encoding/xml
		// refuses the two non-characters (sanitizeXML has removed them
		// before a real parse; FuzzLiftText feeds raw bytes).
		return "", false
	}
	if bytes.HasPrefix(core, []byte("<![CDATA[")) {
		if !bytes.HasSuffix(core, []byte("]]>")) || len(core) <= len("<![CDATA[]]>") {
			return "", false
		}
		inner := core[len("<![CDATA[") : len(core)-len("]]>")]
		if bytes.Contains(inner, []byte("]]>")) {
			return "", false
		}
		return string(inner), true
	}
	if bytes.IndexByte(core, '<') >= 0 || bytes.Contains(core, []byte("]]>")) {
		return "", false
	}
	if bytes.IndexByte(core, '&') < 0 {
		return string(core), true
	}
	var ok bool
	if *scratch, ok = appendXMLUnescaped((*scratch)[:0], core); !ok {
		return "", false
	}
	return string(*scratch), true
}

// hasControl reports whether b holds a C0 control character other than
// tab, CR and LF (parse's sanitizeXML has removed them from a document).
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
}

// restore puts the lifted texts where gofeed put their markers, and
// reports false, leaving feed half restored, if a marker is not where its
// text belongs.
func restore(feed *gofeed.Feed, texts []lifted) bool {
	orig, ok := feed.OriginalFeed().(*rss.Feed)
	if !ok || orig == nil || len(orig.Items) != len(feed.Items) {
		return false
	}
	var buf [24]byte
	for n, t := range texts {
		m := append(strconv.AppendInt(append(buf[:0], liftMark...), int64(n), 10), liftMark...)
		switch t.field {
		case channelDescription:
			if orig.Description != string(m) || feed.Description != string(m) {
				return false
			}
			orig.Description, feed.Description = t.text, t.text
		case itemDescription, itemContent:
			if t.item < 0 || t.item >= len(orig.Items) {
				return false
			}
			oi, fi := orig.Items[t.item], feed.Items[t.item]
			o, f := &oi.Description, &fi.Description
			if t.field == itemContent {
				o, f = &oi.Content, &fi.Content
			}
			if *o != string(m) || *f != string(m) {
				return false
			}
			*o, *f = t.text, t.text
		}
	}
	return true
}

// appendXMLUnescaped appends s with its character references decoded,
// and reports false if an '&' in s starts anything but one of the five
// predefined entities or a character reference both readers decode to
// the same character (see charRefValue).
func appendXMLUnescaped(out, s []byte) ([]byte, bool) {
	for {
		j := bytes.IndexByte(s, '&')
		if j < 0 {
			return append(out, s...), true
		}
		out = append(out, s[:j]...)
		s = s[j:]
		switch {
		case bytes.HasPrefix(s, []byte("&lt;")):
			out, s = append(out, '<'), s[4:]
		case bytes.HasPrefix(s, []byte("&gt;")):
			out, s = append(out, '>'), s[4:]
		case bytes.HasPrefix(s, []byte("&amp;")):
			out, s = append(out, '&'), s[5:]
		case bytes.HasPrefix(s, []byte("&quot;")):
			out, s = append(out, '"'), s[6:]
		case bytes.HasPrefix(s, []byte("&apos;")):
			out, s = append(out, '\''), s[6:]
		default:
			r, n := charRefValue(s)
			if n == 0 {
				return out, false
			}
			out, s = utf8.AppendRune(out, r), s[n:]
		}
	}
}

// charRefValue reads the character reference s starts with ("&#34;",
// "&#x2019;") and returns its character and length, or 0 when s does not
// start with one whose character html.UnescapeString (gofeed's
// DecodeEntities) reads as encoding/xml does, and that is a printable
// character: not a control character, not U+0080 to U+009F (html reads
// those as Windows-1252), nothing XML forbids. Only a lower-case x marks
// hexadecimal, as encoding/xml reads it.
func charRefValue(s []byte) (rune, int) {
	if !bytes.HasPrefix(s, []byte("&#")) {
		return 0, 0
	}
	i, base, maxDigits := 2, rune(10), 7
	if len(s) > 2 && s[2] == 'x' {
		i, base, maxDigits = 3, 16, 6
	}
	start := i
	var r rune
	for ; i < len(s) && i-start <= maxDigits; i++ {
		c := s[i]
		var d rune
		switch {
		case '0' <= c && c <= '9':
			d = rune(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = rune(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = rune(c-'A') + 10
		default:
			d = -1
		}
		if d < 0 {
			break
		}
		r = r*base + d
	}
	if i == start || i-start > maxDigits || i >= len(s) || s[i] != ';' {
		return 0, 0
	}
	switch {
	case r == '\t' || r == '\n',
		0x20 <= r && r < 0x80,
		0xA0 <= r && r <= 0xD7FF,
		0xE000 <= r && r <= 0xFFFD,
		0x10000 <= r && r <= utf8.MaxRune:
		return r, i + 1
	}
	return 0, 0
}

// parseLifted parses doc with its texts lifted (see liftText), or returns
// nil when it lifts nothing or gofeed's reading of it is not certain to be
// the original's. p must be newParser's (parse's own, reused): one that
// scanned the items' HTML for images would scan the markers.
func parseLifted(doc []byte, p *gofeed.Parser) (feed *gofeed.Feed) {
	defer func() {
		// A panic here must not become the document's ParseError: the
		// original is still there to parse.
		if recover() != nil {
			feed = nil
		}
	}()
	alt, texts := liftText(doc)
	if alt == nil {
		return nil
	}
	f, err := p.Parse(bytes.NewReader(alt))
	if err != nil || !restore(f, texts) {
		return nil
	}
	return f
}

// holdsLiftMark reports whether doc holds U+E000, the markers' first rune,
// as it is or as a character reference gofeed would decode to it.
// Each search starts at a byte rare in feeds (bytes.Index stops at every
// occurrence of the first byte: searching "e000;" stopped at every "e").
func holdsLiftMark(doc []byte) bool {
	if bytes.Contains(doc, []byte(liftMark)) || bytes.Contains(doc, []byte("57344;")) {
		return true
	}
	for rest := doc; ; {
		i := bytes.Index(rest, []byte("000;"))
		if i < 0 {
			return false
		}
		if i > 0 && rest[i-1]|0x20 == 'e' { // "e000;" or "E000;"
			return true
		}
		rest = rest[i+4:]
	}
}
