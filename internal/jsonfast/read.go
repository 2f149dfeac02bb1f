package jsonfast

import (
	"unicode/utf16"
	"unicode/utf8"
)

// ReadString reads the JSON string s starts with (its opening quote at
// s[0]) as json.Unmarshal reads one into a string: escapes decoded,
// surrogate pairs joined, a lone surrogate and each invalid UTF-8 byte
// read as U+FFFD. n is the quoted string's length in s; ok is false when
// s does not start with a string json.Unmarshal accepts. A string of a
// string s without escapes or invalid UTF-8 is a part of s.
func ReadString[T ~string | ~[]byte](s T) (v string, n int, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", 0, false
	}
	ascii := true
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			raw := s[1:i]
			if !ascii && !utf8.Valid([]byte(raw)) {
				return unquote(s[1:])
			}
			return string(raw), i + 1, true
		case c == '\\':
			return unquote(s[1:])
		case c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false
}

// unquote decodes the string body s (after its opening quote) with
// encoding/json's unquote; n counts the opening quote.
func unquote[T ~string | ~[]byte](s T) (v string, n int, ok bool) {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			return string(b), i + 2, true
		case c < 0x20:
			return "", 0, false
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i += 2
			switch e := s[i-1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(s[i:])
				if r < 0 {
					return "", 0, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A pair only with a low surrogate's escape next; else
					// U+FFFD, and what follows is read on its own.
					lo := rune(-1)
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						lo = hex4(s[i+2:])
					}
					if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", 0, false
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return "", 0, false
}

// hex4 reads 4 hex digits, or returns -1.
func hex4[T ~string | ~[]byte](s T) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for i := range 4 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
