package feeds

import (
	"bytes"
	"unicode/utf8"
)

// Escaped HTML in an RSS <description> costs gofeed twice: encoding/xml
// decodes every entity while it records the element's inner XML, and
// gofeed then decodes the inner XML again, one html.UnescapeString call
// per entity. The same text in a CDATA section is copied, not decoded,
// both times. cdataText rewrites such elements of an RSS document into
// CDATA sections holding the decoded text, where doing so provably leaves
// gofeed's result unchanged:
//
//   - only <description> and <content:encoded> elements without
//     attributes, children of the channel or of an item, whose content is
//     text alone (no markup, comment or CDATA section), found by a scan
//     that skips comments, CDATA sections, processing instructions and
//     quoted attribute values as encoding/xml does (a document with a
//     DOCTYPE or another <! declaration, or not properly nested, is left
//     alone);
//   - only when every '&' in that text starts one of the five predefined
//     entities (&lt; &gt; &amp; &quot; &apos;) or a character reference
//     of a printable character, which gofeed's DecodeEntities and
//     encoding/xml decode alike, so the element reads the same whether
//     gofeed takes its inner XML (shared.ParseText) or its character data
//     (an extension element's Value);
//   - the surrounding white space stays outside the section, where both
//     readers trim it; text holding "]]>" as it is, or once decoded, is left
//     alone (the first is an error for encoding/xml, the second would end
//     the section).
//
// It returns nil when there is nothing to rewrite or the document is not
// one it can scan. parse falls back to the original document on any
// error, so a rewrite never changes what a broken document yields.
// TestCDATATextDocuments (the corpus) and FuzzCDATAText hold gofeed's
// results on the two documents equal.
func cdataText(doc []byte) []byte {
	if !bytes.HasPrefix(doc, []byte("<rss")) || len(doc) < 5 || (doc[4] != '>' && !isSpace(doc[4])) {
		return nil
	}
	var out []byte
	last := 0 // doc[:last] is in out already
	var openBuf [8][]byte
	open := openBuf[:0] // the names of the elements open at i
	for i := 0; ; {
		j := bytes.IndexByte(doc[i:], '<')
		if j < 0 {
			break
		}
		pos := i + j
		rest := doc[pos:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			k := bytes.Index(rest[4:], []byte("-->"))
			if k < 0 {
				return nil
			}
			i = pos + 4 + k + 3
			continue
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			k := bytes.Index(rest[9:], []byte("]]>"))
			if k < 0 {
				return nil
			}
			i = pos + 9 + k + 3
			continue
		case bytes.HasPrefix(rest, []byte("<?")):
			k := bytes.Index(rest[2:], []byte("?>"))
			if k < 0 {
				return nil
			}
			i = pos + 2 + k + 2
			continue
		case bytes.HasPrefix(rest, []byte("<!")):
			return nil
		}
		end := tagEnd(rest)
		if end < 0 {
			return nil
		}
		i = pos + end + 1
		tag := rest[:end+1]
		if tag[1] == '/' {
			name := tagName(tag[2:])
			if len(open) == 0 || !bytes.Equal(open[len(open)-1], name) {
				return nil // not properly nested: leave the document alone
			}
			open = open[:len(open)-1]
			continue
		}
		parent := open
		if tag[len(tag)-2] != '/' {
			if len(open) == maxCDATADepth {
				return nil
			}
			open = append(open, tagName(tag[1:]))
		}
		close := closingTag(tag)
		if close == nil || !itemOrChannel(parent) {
			continue
		}
		k := bytes.IndexByte(doc[i:], '<')
		if k < 0 || !bytes.HasPrefix(doc[i+k:], close) {
			continue
		}
		text := doc[i : i+k]
		core := bytes.TrimSpace(text)
		if bytes.IndexByte(core, '&') < 0 || bytes.Contains(core, []byte("]]>")) {
			continue
		}
		lead := bytes.Index(text, core)
		if out == nil {
			out = make([]byte, 0, len(doc))
		}
		mark := len(out)
		out = append(out, doc[last:i+lead]...)
		out = append(out, "<![CDATA["...)
		var ok bool
		if out, ok = appendXMLUnescaped(out, core); !ok || bytes.Contains(out[mark:], []byte("]]>")) {
			// Either an entity other than the five, or the decoded text
			// would end the section early: keep the element as it is.
			out = out[:mark]
			continue
		}
		out = append(out, "]]>"...)
		last = i + lead + len(core)
		i += k
	}
	if last == 0 { // nothing rewritten
		return nil
	}
	return append(out, doc[last:]...)
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

// maxCDATADepth is the deepest nesting cdataText follows.
const maxCDATADepth = 64

// tagName is the name a start or end tag's text after '<' or '</' begins
// with.
func tagName(b []byte) []byte {
	if k := bytes.IndexAny(b, " \t\r\n/>"); k >= 0 {
		return b[:k]
	}
	return b
}

// itemOrChannel reports whether open, the elements open around an
// element, are <rss><channel> or <rss><channel><item>: gofeed reads the
// children of those one by one, and none of them as a whole (an
// unknown element's inner XML is decoded as one text, where a CDATA
// section would change how an '&' before it is read).
func itemOrChannel(open [][]byte) bool {
	switch {
	case len(open) < 2 || len(open) > 3,
		string(open[0]) != "rss" || string(open[1]) != "channel",
		len(open) == 3 && string(open[2]) != "item":
		return false
	}
	return true
}

// closingTag returns the end tag of the elements cdataText rewrites, when
// tag is one of their start tags without attributes, or nil.
func closingTag(tag []byte) []byte {
	switch string(tag) {
	case "<description>":
		return []byte("</description>")
	case "<content:encoded>":
		return []byte("</content:encoded>")
	}
	return nil
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
// start with one whose character encoding/xml and html.UnescapeString
// (gofeed's DecodeEntities) agree on and that reads the same as a literal
// character in a CDATA section: not a control character (gofeed drops
// those from the stream, and a literal CR becomes LF), not U+0080 to
// U+009F (html reads those as Windows-1252), nothing XML forbids. Only a
// lower-case x marks hexadecimal, as encoding/xml reads it.
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
