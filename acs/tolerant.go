package acs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The one place where answers are read tolerantly. The spec shows no
// response bodies (section 4.8), so a real service may write a value in
// another JSON type than the one the client's types name. What is read:
//
//   - integers: a JSON number (1.0 too, if whole) or a numeric string;
//   - booleans: true/false, "true"/"false" (any case), 0/1 and "0"/"1";
//   - strings: a JSON string, or a number, taken as its text;
//   - timestamps: see [Timestamp.UnmarshalJSON];
//   - a reference ({id, self} or {id}): an object, or its bare id;
//   - a list: an array, or one object taken as a list of one;
//   - null anywhere: the field is absent;
//   - unknown fields: ignored (the types with a Raw field keep them).
//
// An answer in the sandbox's exact shape takes the fast path, one
// encoding/json pass; only one that fails it is walked here, so the cost
// of tolerance is paid by the services that need it. What the client
// sends is never touched by this: requests are written by encoding/json
// from the request types, exactly as the spec says.

// ErrUnreadable matches a 2xx answer whose body the client cannot read
// even tolerantly (see [DecodeError]). Retrying the same request gets the
// same body: it is not a transient failure.
var ErrUnreadable = errors.New("acs: unreadable answer")

// DecodeError is a 2xx answer whose body could not be read. It matches
// [ErrUnreadable]. The request was carried out by the service: a POST that
// got one may have created the resource.
type DecodeError struct {
	Method string
	Route  string
	Status int
	// Field is the path of the offending value in the answer's data, such
	// as "id" or "categories[1].id"; empty when the body as a whole is
	// unreadable (not JSON, or the wrong shape).
	Field string
	Err   error
}

// Error reads "acs: POST /v3/story: the service answered 201 but its body
// could not be read: field id: ...".
func (e *DecodeError) Error() string {
	return fmt.Sprintf("acs: %s %s: the service answered %d but its body could not be read: %v", e.Method, e.Route, e.Status, e.Err)
}

// Is reports whether target is [ErrUnreadable].
func (e *DecodeError) Is(target error) bool { return target == ErrUnreadable }

// Unwrap returns the decoding error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Cause is a bounded label for the error, fit for a metric: the field's
// path without list indexes ("categories.id"), or "body" when the body as
// a whole could not be read.
func (e *DecodeError) Cause() string {
	if e.Field == "" {
		return "body"
	}
	var b strings.Builder
	skip := false
	for _, r := range e.Field {
		switch {
		case r == '[':
			skip = true
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return strings.TrimPrefix(b.String(), ".")
}

// fieldError is a value that cannot be read as its field's type.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return "field " + e.path + ": " + e.msg
}

// fieldOf returns the offending field's path of a decoding error, if it
// names one.
func fieldOf(err error) string {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.path
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}

// DecodeRaw reads raw, such as the Raw field of a [Subscriber] or an
// [Insight], into v (a pointer, typically to a struct of the fields the
// caller wants) with the tolerance the client reads answers with. Its
// errors name the offending field.
func DecodeRaw(raw []byte, v any) error {
	if err := lenient(raw, v); err != nil {
		return fmt.Errorf("acs: decode raw: %w", err)
	}
	return nil
}

// lenient decodes b into v, a non-nil pointer: by encoding/json first,
// and when that fails on a value (not on the syntax), again after
// normalize has rewritten the values the tolerance rules accept.
func lenient(b []byte, v any) error {
	err := json.Unmarshal(b, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("not JSON: %w", err)
	}
	return tolerant(b, v)
}

// tolerant decodes b, valid JSON, into v after normalize has rewritten
// the values the tolerance rules accept.
func tolerant(b []byte, v any) error {
	rv := reflect.ValueOf(v).Elem()
	fixed, nerr := normalize(bytes.TrimSpace(b), rv.Type(), "")
	if nerr != nil {
		return nerr
	}
	rv.SetZero()
	if fixed == nil {
		return nil // null
	}
	if err := json.Unmarshal(fixed, v); err != nil {
		// normalize let through something encoding/json refuses.
		return err
	}
	return nil
}

var (
	timestampType   = reflect.TypeFor[Timestamp]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// normalize rewrites raw, one valid JSON value, into the JSON types t
// wants, or says which value cannot be. It works on the raw text, so that
// strings (an HTML body) are copied, never unquoted and quoted again. A
// nil result is null: absent. Nulls are dropped from objects; unknown keys
// are kept as they are (encoding/json ignores them).
func normalize(raw []byte, t reflect.Type, path string) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timestampType:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return nil, &fieldError{path, fmt.Sprintf("%s is not a timestamp", excerpt(raw))}
		}
		if s == "" {
			return raw, nil
		}
		ts, err := parseAnswerTimestamp(s)
		if err != nil {
			return nil, &fieldError{path, fmt.Sprintf("%s is not a timestamp", excerpt(raw))}
		}
		return strconv.AppendQuote(nil, ts.String()), nil
	case t == rawMessageType:
		return raw, nil
	case reflect.PointerTo(t).Implements(unmarshalerType):
		// A type that reads itself (through lenient, for the types of
		// this package): check it here so that its error gets the path.
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				return nil, &fieldError{joinPath(path, fe.path), fe.msg}
			}
			return nil, &fieldError{path, err.Error()}
		}
		return raw, nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := readInt(scalar(raw))
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not an integer", excerpt(raw))}
		}
		return strconv.AppendInt(nil, n, 10), nil
	case reflect.Float32, reflect.Float64:
		switch x := scalar(raw).(type) {
		case json.Number:
			return raw, nil
		case string:
			if _, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return []byte(strings.TrimSpace(x)), nil
			}
		}
		return nil, &fieldError{path, fmt.Sprintf("%s is not a number", excerpt(raw))}
	case reflect.Bool:
		b, ok := readBool(scalar(raw))
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not a boolean", excerpt(raw))}
		}
		return strconv.AppendBool(nil, b), nil
	case reflect.String:
		switch raw[0] {
		case '"':
			return raw, nil
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return strconv.AppendQuote(nil, string(raw)), nil // a number, as its text
		}
		return nil, &fieldError{path, fmt.Sprintf("%s is not a string", excerpt(raw))}
	case reflect.Slice:
		var items []json.RawMessage
		switch raw[0] {
		case '[':
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, &fieldError{path, err.Error()}
			}
		case '{':
			items = []json.RawMessage{raw} // one object: a list of one
		default:
			return nil, &fieldError{path, fmt.Sprintf("%s is not a list", excerpt(raw))}
		}
		out := []byte{'['}
		for i, it := range items {
			n, err := normalize(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if n == nil {
				continue
			}
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, n...)
		}
		return append(out, ']'), nil
	case reflect.Map:
		if raw[0] != '{' {
			return nil, &fieldError{path, fmt.Sprintf("%s is not an object", excerpt(raw))}
		}
		return normalizeObject(raw, path, func(k string) (reflect.Type, string, bool) { return t.Elem(), k, true })
	case reflect.Struct:
		if raw[0] != '{' {
			// A bare id stands for a reference.
			if _, _, hasID := jsonField(t, "id"); hasID {
				if _, isID := readInt(scalar(raw)); isID {
					return normalize(append(append([]byte(`{"id":`), raw...), '}'), t, path)
				}
			}
			return nil, &fieldError{path, fmt.Sprintf("%s is not an object", excerpt(raw))}
		}
		return normalizeObject(raw, path, func(k string) (reflect.Type, string, bool) { return jsonField(t, k) })
	}
	return raw, nil
}

// normalizeObject rewrites the object raw key by key: field says the
// type and name of a key's field; unknown keys are kept as they are and
// nulls dropped.
func normalizeObject(raw []byte, path string, field func(key string) (reflect.Type, string, bool)) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &fieldError{path, err.Error()}
	}
	out := []byte{'{'}
	for k, x := range m {
		if string(x) == "null" {
			continue // absent
		}
		ft, name, known := field(k)
		if known {
			// The path names the field as the client's types do,
			// whatever the case of the key received, so that causes stay
			// few.
			n, err := normalize(x, ft, joinPath(path, name))
			if err != nil {
				return nil, err
			}
			if n == nil {
				continue
			}
			x = n
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, k)
		out = append(out, ':')
		out = append(out, x...)
	}
	return append(out, '}'), nil
}

// scalar decodes a JSON scalar, numbers as json.Number; nil for an
// object, a list or anything unreadable.
func scalar(raw []byte) any {
	if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return v
}

// jsonField finds the field of struct t that encoding/json would decode
// the key name into (an exact match first, then a case-insensitive one, as
// encoding/json does): its type and its JSON name.
func jsonField(t reflect.Type, name string) (reflect.Type, string, bool) {
	var fold reflect.Type
	var foldName string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		key, _, _ := strings.Cut(tag, ",")
		if key == "" {
			key = f.Name
		}
		if key == name {
			return f.Type, key, true
		}
		if fold == nil && strings.EqualFold(key, name) {
			fold, foldName = f.Type, key
		}
	}
	return fold, foldName, fold != nil
}

func joinPath(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	case strings.HasPrefix(key, "["):
		return path + key
	}
	return path + "." + key
}

// readInt reads an integer from a JSON number (whole) or a numeric string.
func readInt(v any) (int64, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// readBool reads true/false, "true"/"false" in any case, 0/1 and "0"/"1".
func readBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case json.Number:
		switch x.String() {
		case "0":
			return false, true
		case "1":
			return true, true
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "1":
			return true, true
		case "false", "0":
			return false, true
		}
	}
	return false, false
}

// readPage reads a paging number (page, page_size, total) tolerantly; 0
// when absent or unreadable, since paging data is informative only.
func readPage(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return 0
	}
	n, ok := readInt(v)
	if !ok || n < 0 || n > 1<<31 {
		return 0
	}
	return int(n)
}

// maxExcerpt bounds how much of an offending value an error quotes.
const maxExcerpt = 40

// excerpt quotes a value of an answer for an error message, shortened.
func excerpt(v any) string {
	if raw, ok := v.([]byte); ok {
		switch {
		case len(raw) > 0 && raw[0] == '{':
			return "an object"
		case len(raw) > 0 && raw[0] == '[':
			return "a list"
		}
		v = scalar(raw)
	}
	var s string
	switch x := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		if utf8.RuneCountInString(x) > maxExcerpt {
			r := []rune(x)
			x = string(r[:maxExcerpt]) + "..."
		}
		s = strconv.Quote(x)
	default:
		s = fmt.Sprint(x)
	}
	return s
}
