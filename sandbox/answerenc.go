package sandbox

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/feedworker/feedworker/internal/jsonfast"
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
		return jsonfast.AppendString(dst, v), nil
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
			dst = jsonfast.AppendString(dst, k)
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
		return jsonfast.AppendInt64s(dst, v), nil
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
