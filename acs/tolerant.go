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
	var tree any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if derr := d.Decode(&tree); derr != nil {
		return fmt.Errorf("not JSON: %w", derr)
	}
	rv := reflect.ValueOf(v).Elem()
	fixed, nerr := normalize(tree, rv.Type(), "")
	if nerr != nil {
		return nerr
	}
	nb, merr := marshal(fixed) // without HTML escaping: shorter, same meaning
	if merr != nil {
		return fmt.Errorf("re-encode: %w", merr)
	}
	rv.SetZero()
	if err := json.Unmarshal(nb, v); err != nil {
		// normalize let through something encoding/json refuses: report
		// the first error, which names the field in the answer's terms.
		return fmt.Errorf("%w", err)
	}
	return nil
}

var (
	timestampType   = reflect.TypeFor[Timestamp]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// normalize rewrites v, decoded with UseNumber, into the JSON types t
// wants, or says which value cannot be. Nulls are dropped from objects;
// unknown keys are kept as they are (encoding/json ignores them).
func normalize(v any, t reflect.Type, path string) (any, error) {
	if v == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timestampType:
		s, ok := v.(string)
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not a timestamp", excerpt(v))}
		}
		if s == "" {
			return s, nil
		}
		ts, err := parseAnswerTimestamp(s)
		if err != nil {
			return nil, &fieldError{path, fmt.Sprintf("%s is not a timestamp", excerpt(v))}
		}
		return ts.String(), nil
	case t == rawMessageType:
		return v, nil
	case reflect.PointerTo(t).Implements(unmarshalerType):
		// A type that reads itself (through lenient, for the types of
		// this package): check it here so that its error gets the path.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &fieldError{path, err.Error()}
		}
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				return nil, &fieldError{joinPath(path, fe.path), fe.msg}
			}
			return nil, &fieldError{path, err.Error()}
		}
		return v, nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := readInt(v)
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not an integer", excerpt(v))}
		}
		return json.Number(strconv.FormatInt(n, 10)), nil
	case reflect.Float32, reflect.Float64:
		switch x := v.(type) {
		case json.Number:
			return x, nil
		case string:
			if _, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return json.Number(strings.TrimSpace(x)), nil
			}
		}
		return nil, &fieldError{path, fmt.Sprintf("%s is not a number", excerpt(v))}
	case reflect.Bool:
		b, ok := readBool(v)
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not a boolean", excerpt(v))}
		}
		return b, nil
	case reflect.String:
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		}
		return nil, &fieldError{path, fmt.Sprintf("%s is not a string", excerpt(v))}
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			if _, obj := v.(map[string]any); !obj {
				return nil, &fieldError{path, fmt.Sprintf("%s is not a list", excerpt(v))}
			}
			items = []any{v}
		}
		out := make([]any, 0, len(items))
		for i, it := range items {
			n, err := normalize(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if n != nil {
				out = append(out, n)
			}
		}
		return out, nil
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not an object", excerpt(v))}
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			n, err := normalize(x, t.Elem(), joinPath(path, k))
			if err != nil {
				return nil, err
			}
			if n != nil {
				out[k] = n
			}
		}
		return out, nil
	case reflect.Struct:
		return normalizeStruct(v, t, path)
	}
	return v, nil
}

// normalizeStruct rewrites the object v into the fields of struct t. A
// bare id stands for a struct with an id field (a reference).
func normalizeStruct(v any, t reflect.Type, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if _, has := jsonField(t, "id"); has {
			if _, isID := readInt(v); isID {
				m = map[string]any{"id": v}
				ok = true
			}
		}
		if !ok {
			return nil, &fieldError{path, fmt.Sprintf("%s is not an object", excerpt(v))}
		}
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if x == nil {
			continue // null: absent
		}
		ft, known := jsonField(t, k)
		if !known {
			out[k] = x
			continue
		}
		n, err := normalize(x, ft, joinPath(path, k))
		if err != nil {
			return nil, err
		}
		if n != nil {
			out[k] = n
		}
	}
	return out, nil
}

// jsonField finds the type of the field of struct t that encoding/json
// would decode the key name into: an exact tag match first, then a
// case-insensitive one, as encoding/json does.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	var fold reflect.Type
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
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(key, name) {
			fold = f.Type
		}
	}
	return fold, fold != nil
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

// excerpt quotes a value for an error message, shortened.
func excerpt(v any) string {
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
