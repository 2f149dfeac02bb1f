// Package jsonfast holds the pieces of the hand-written JSON codecs that
// write and read fixed shapes without reflection (the sandbox's answers
// and journal, the publish outbox's envelope head, the history's item
// records, the worker's digests). Each writes encoding/json's own bytes
// and each reader reads as json.Unmarshal does, so records written either
// way read the same; the tests hold every piece to encoding/json.
package jsonfast

import (
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a json.Encoder with SetEscapeHTML(false)
// writes a string: quote, backslash and control characters escaped (\b,
// \f, \n, \r, \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// AppendStringHTML appends s as json.Marshal writes a string: as
// AppendString, and <, > and & as \u003c, \u003e and \u0026.
func AppendStringHTML(dst []byte, s string) []byte { return appendString(dst, s, true) }

func appendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; ; {
		i += verbatimLen(s[i:], html)
		if i == len(s) {
			break
		}
		esc, size := "", 1
		if c := s[i]; c < utf8.RuneSelf {
			esc = EscapeASCII(c)
		} else {
			esc, size = EscapeRune(s[i:])
		}
		if esc != "" {
			dst = append(dst, s[start:i]...)
			// Byte by byte: a memmove call for so few costs more.
			if len(esc) == 6 {
				dst = append(dst, esc[0], esc[1], esc[2], esc[3], esc[4], esc[5])
			} else {
				dst = append(dst, esc[0], esc[1])
			}
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// verbatimLen returns how many bytes s begins with that encoding/json
// writes as they stand (see Verbatim).
func verbatimLen(s string, html bool) int {
	mask := byte(verbatimPlain)
	if html {
		mask = verbatimHTML
	}
	for i := 0; i < len(s); i++ {
		if verbatimTable[s[i]]&mask == 0 {
			return i
		}
	}
	return len(s)
}

// Verbatim reports whether encoding/json writes the byte c of a string as
// it stands, with html as for AppendStringHTML. It is false for every byte
// of a multi-byte character: EscapeRune tells those.
func Verbatim(c byte, html bool) bool {
	if html {
		return verbatimTable[c]&verbatimHTML != 0
	}
	return verbatimTable[c]&verbatimPlain != 0
}

// verbatimTable tells, per byte, whether encoding/json writes it as it
// stands in a string (bit verbatimPlain: printable ASCII but " and \),
// and also with HTML escaping (bit verbatimHTML: nor <, > and &). One
// load a byte, where the comparisons were five: HTML bodies are most of
// what the worker encodes. TestVerbatimTable checks it.
const verbatimTable = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x03\x03\x00\x03\x03\x03\x01\x03\x03\x03\x03\x03\x03\x03\x03\x03" +
	"\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x01\x03\x01\x03" +
	"\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03" +
	"\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x00\x03\x03\x03" +
	"\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03" +
	"\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

const (
	verbatimPlain = 1
	verbatimHTML  = 2
)

// controlEscapes is \u00XX for each control character, 6 bytes each.
const controlEscapes = `\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u0009\u000a\u000b\u000c\u000d\u000e\u000f` +
	`\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f`

// EscapeASCII is what encoding/json writes for the ASCII byte c that is
// not Verbatim. Small enough to inline: HTML's escapes are most of a
// body's.
func EscapeASCII(c byte) string {
	switch c {
	case '<':
		return `\u003c`
	case '>':
		return `\u003e`
	case '&':
		return `\u0026`
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	return controlEscapes[6*int(c&0x1f):][:6]
}

// EscapeRune tells how encoding/json writes the character s starts with
// (s[0] not ASCII): esc is what it writes for the size bytes of it, or ""
// when it writes them as they stand (a valid character other than U+2028
// and U+2029). Each invalid UTF-8 byte is a character of its own, written
// as \ufffd.
func EscapeRune(s string) (esc string, size int) {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size == 1:
		return `\ufffd`, 1
	case r == '\u2028':
		return `\u2028`, size
	case r == '\u2029':
		return `\u2029`, size
	}
	return "", size
}

// AppendStrings appends v as a json.Encoder with SetEscapeHTML(false)
// writes a []string (nil as null).
func AppendStrings(dst []byte, v []string) []byte { return appendStrings(dst, v, false) }

// AppendStringsHTML appends v as json.Marshal writes a []string (nil as
// null).
func AppendStringsHTML(dst []byte, v []string) []byte { return appendStrings(dst, v, true) }

func appendStrings(dst []byte, v []string, html bool) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s, html)
	}
	return append(dst, ']')
}

// AppendInt64s appends v as encoding/json writes an []int64 (nil as
// null).
func AppendInt64s(dst []byte, v []int64) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, n := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, n, 10)
	}
	return append(dst, ']')
}
