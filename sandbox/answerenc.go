package sandbox

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendAnswer appends the JSON of an answer to dst: byte for byte what a
// json.Encoder with SetEscapeHTML(false) writes for v, newline included,
// written directly for the shapes answers are built of (maps with string
// keys, in sorted order; slices; the values decodeValue returns; id
// objects). The encoder's reflection and map sorting were most of the
// cost of answering a write (a 100,000-item import answers 100,000 of
// them). Any other value is handed to the encoder.
func appendAnswer(dst []byte, v any) ([]byte, error) {
	dst, err := appendAnswerValue(dst, v)
	if err != nil {
		return nil, err
	}
	return append(dst, "\n"...), nil
}

func appendAnswerValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendAnswerString(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAnswerString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendAnswerValue(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []map[string]any:
		return appendAnswerSlice(dst, v, v == nil)
	case []any:
		return appendAnswerSlice(dst, v, v == nil)
	case []int64:
		return appendInt64s(dst, v), nil
	case idObject:
		return appendIDObject(dst, v), nil
	case []idObject:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, o := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendIDObject(dst, o)
		}
		return append(dst, ']'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

func appendAnswerSlice[T any](dst []byte, v []T, isNil bool) ([]byte, error) {
	if isNil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, e := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendAnswerValue(dst, e); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

func appendIDObject(dst []byte, o idObject) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, o.ID, 10)
	return append(dst, '}')
}

// appendAnswerString appends s as encoding/json writes a string without
// HTML escaping: quote, backslash and control characters escaped (\b, \f,
// \n, \r, \t by name), invalid UTF-8 as U+FFFD, and U+2028 and U+2029
// escaped.
func appendAnswerString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
