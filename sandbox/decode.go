package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// apiError is an answer other than success: its status and the body
// {"error":{"status","message","field"}} of the wire conventions.
type apiError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// invalid is a 400 naming the field at fault.
func invalid(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// maxBody bounds request bodies; an envelope with one object is far smaller.
const maxBody = 1 << 20

// timestampLayout is the one shape of every *_utc field: YYYY-MM-DD HH:MM:SS
// in UTC, without zone or fraction.
const timestampLayout = "2006-01-02 15:04:05"

// validTimestamp is strict: the round trip refuses what time.Parse alone
// accepts (one-digit hours, a fraction), and Parse refuses month 13 or Feb 30.
func validTimestamp(s string) bool {
	t, err := time.Parse(timestampLayout, s)
	return err == nil && t.Format(timestampLayout) == s
}

func formatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// readBody reads the whole body, refusing more than maxBody.
func readBody(r *http.Request) ([]byte, *apiError) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("body is larger than %d bytes", maxBody)}
	}
	if err != nil {
		return nil, &apiError{Status: http.StatusBadRequest, Message: "read body: " + err.Error()}
	}
	return b, nil
}

// checkJSONContentType enforces spec 2.1: bodies are sent as application/json
// (a charset parameter, if any, must be utf-8).
func checkJSONContentType(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return invalid("Content-Type", "Content-Type must be application/json, got none")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return invalid("Content-Type", "Content-Type must be application/json, got %q", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return invalid("Content-Type", "Content-Type charset must be utf-8, got %q", cs)
	}
	return nil
}

// decodeJSON decodes one JSON value with numbers kept as json.Number, so
// that integers are told from 1.5 and 1e3. Duplicate object keys are
// refused: encoding/json would silently keep the last one.
func decodeJSON(b []byte, what string) (any, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, invalid(what, "%s is not valid JSON: %v", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid(what, "%s holds more than one JSON value", what)
	}
	if key := duplicateKey(b); key != "" {
		return nil, invalid(key, "%s: key %q appears twice in one object", what, key)
	}
	return v, nil
}

// duplicateKey returns the first key that appears twice in one object of
// b, which must hold one valid JSON value (decodeJSON checks that first).
// It scans the bytes once: the decoder's token API, which did this before,
// cost as much as decoding the body itself. Keys are compared as the
// decoder reads them, escapes and invalid UTF-8 resolved.
func duplicateKey(b []byte) string {
	type frame struct {
		object bool
		keys   []string            // the keys of a small object
		many   map[string]struct{} // and of a large one
	}
	var stack []*frame
	expectKey := false
	for i := 0; i < len(b); {
		switch b[i] {
		case '{':
			stack = append(stack, &frame{object: true})
			expectKey = true
			i++
		case '[':
			stack = append(stack, &frame{})
			expectKey = false
			i++
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
			i++
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
			i++
		case '"':
			end := stringEnd(b, i)
			if expectKey {
				expectKey = false
				key := jsonKey(b[i:end])
				top := stack[len(stack)-1]
				if top.many != nil {
					if _, dup := top.many[key]; dup {
						return key
					}
					top.many[key] = struct{}{}
				} else {
					if slices.Contains(top.keys, key) {
						return key
					}
					top.keys = append(top.keys, key)
					if len(top.keys) > 16 {
						top.many = make(map[string]struct{}, 2*len(top.keys))
						for _, k := range top.keys {
							top.many[k] = struct{}{}
						}
						top.keys = nil
					}
				}
			}
			i = end
		default: // ':', white space, numbers, true, false, null
			i++
		}
	}
	return ""
}

// stringEnd returns the index after the string literal starting at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++ // the escaped byte cannot end the string
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// jsonKey returns the text of a key's string literal (quotes included).
func jsonKey(lit []byte) string {
	raw := lit[1 : len(lit)-1]
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(lit, &s) // valid: decodeJSON decoded it already
	return s
}

// readEnvelope reads the body of a POST or PUT (spec 2.1) and returns the one
// object of template.data. With optional, an empty body is allowed and
// reported by present false.
func readEnvelope(r *http.Request, optional bool) (obj map[string]any, present bool, aerr *apiError) {
	b, aerr := readBody(r)
	if aerr != nil {
		return nil, false, aerr
	}
	if optional && len(bytes.TrimSpace(b)) == 0 {
		return nil, false, nil
	}
	if aerr := checkJSONContentType(r); aerr != nil {
		return nil, false, aerr
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false, invalid("template", `body is empty; want {"template":{"version":"3.0","data":[{...}]}}`)
	}
	v, aerr := decodeJSON(b, "body")
	if aerr != nil {
		return nil, false, aerr
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, false, invalid("template", "body must be a JSON object with a template, got %s", describe(v))
	}
	for _, k := range sortedKeys(top) {
		if k != "template" {
			return nil, false, invalid(k, "unknown field %s in the envelope; only template is allowed", k)
		}
	}
	tv, ok := top["template"]
	if !ok {
		return nil, false, invalid("template", "template is required")
	}
	tmpl, ok := tv.(map[string]any)
	if !ok {
		return nil, false, invalid("template", "template must be an object, got %s", describe(tv))
	}
	for _, k := range sortedKeys(tmpl) {
		if k != "version" && k != "data" {
			return nil, false, invalid("template."+k, "unknown field template.%s; only version and data are allowed", k)
		}
	}
	switch ver, ok := tmpl["version"]; {
	case !ok:
		return nil, false, invalid("template.version", `template.version is required and must be "3.0"`)
	case ver != "3.0":
		return nil, false, invalid("template.version", `template.version must be the string "3.0", got %s`, show(ver))
	}
	dv, ok := tmpl["data"]
	if !ok {
		return nil, false, invalid("template.data", "template.data is required")
	}
	data, ok := dv.([]any)
	if !ok {
		return nil, false, invalid("template.data", "template.data must be an array, got %s", describe(dv))
	}
	if len(data) != 1 {
		return nil, false, invalid("template.data", "template.data must hold exactly one object, got %d", len(data))
	}
	obj, ok = data[0].(map[string]any)
	if !ok {
		return nil, false, invalid("template.data[0]", "template.data[0] must be an object, got %s", describe(data[0]))
	}
	return obj, true, nil
}

// op is the kind of write a body is parsed for.
type op int

const (
	opCreate op = iota
	opUpdate
)

// parse validates a data object against sc for a create or an update and
// returns the typed values to set and the optional fields sent as null,
// which an update clears. Keys are checked in sorted order, so the first
// error is the same whatever the client's key order.
func (sc *schema) parse(obj map[string]any, o op) (set map[string]any, clear []string, aerr *apiError) {
	set = map[string]any{}
	for _, name := range sortedKeys(obj) {
		v := obj[name]
		f := sc.field(name)
		switch {
		case f == nil && sc.elsewhere[name]:
			return nil, nil, invalid(name, "%s has no field %s (spec 2.7)", sc.name, name)
		case f == nil:
			return nil, nil, invalid(name, "unknown field %s for %s", name, sc.name)
		case name == "id" && o == opCreate:
			return nil, nil, invalid(name, "id is assigned by the service and must not be sent on create")
		case f.access == accessRead:
			return nil, nil, invalid(name, "%s is read-only", name)
		case f.access == accessCreate && o == opUpdate:
			return nil, nil, invalid(name, "%s can only be set on create", name)
		case f.access == accessUpdate && o == opCreate:
			return nil, nil, invalid(name, "%s can only be set on update", name)
		}
		if v == nil {
			// null means "no value": nothing on create, cleared on update.
			if f.required || (o == opUpdate && f.requiredOnUpdate) {
				return nil, nil, invalid(name, "%s must not be null", name)
			}
			if o == opUpdate {
				clear = append(clear, name)
			}
			continue
		}
		val, aerr := decodeValue(f, v, name)
		if aerr != nil {
			return nil, nil, aerr
		}
		set[name] = val
	}
	for _, f := range sc.fields {
		if _, ok := set[f.name]; ok {
			continue
		}
		if o == opCreate && f.required {
			return nil, nil, invalid(f.name, "%s is required", f.name)
		}
		if o == opUpdate && f.requiredOnUpdate {
			return nil, nil, invalid(f.name, "%s is required on update", f.name)
		}
	}
	return set, clear, nil
}

// mergeField is one entry of a Blast's blast_merge_fields, as stored and
// rendered.
type mergeField struct {
	ID    int64    `json:"id"`
	Type  idObject `json:"type"`
	Value string   `json:"value"`
}

type idObject struct {
	ID int64 `json:"id"`
}

// decodeValue checks one JSON value against f and returns it typed as
// stored: string, int64, bool, []int64 (refs and id objects keep their ids)
// or []mergeField.
func decodeValue(f *field, v any, path string) (any, *apiError) {
	var val any
	switch f.kind {
	case kindString:
		s, ok := v.(string)
		if !ok {
			return nil, invalid(path, "%s must be a string, got %s", path, describe(v))
		}
		val = s
	case kindTimestamp:
		s, ok := v.(string)
		if !ok || !validTimestamp(s) {
			return nil, invalid(path, "%s must be a UTC timestamp shaped YYYY-MM-DD HH:MM:SS, got %s", path, show(v))
		}
		val = s
	case kindInteger:
		n, ok := asInt(v)
		if !ok {
			return nil, invalid(path, "%s must be an integer, got %s", path, show(v))
		}
		val = n
	case kindBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, invalid(path, "%s must be a boolean, got %s", path, describe(v))
		}
		val = b
	case kindRef, kindIDObject:
		id, aerr := decodeIDObject(v, path, f.kind == kindRef)
		if aerr != nil {
			return nil, aerr
		}
		val = id
	case kindRefs, kindIDObjects:
		arr, ok := v.([]any)
		if !ok {
			return nil, invalid(path, "%s must be an array, got %s", path, describe(v))
		}
		ids := make([]int64, 0, len(arr))
		for i, e := range arr {
			p := fmt.Sprintf("%s[%d]", path, i)
			id, aerr := decodeIDObject(e, p, f.kind == kindRefs)
			if aerr != nil {
				return nil, aerr
			}
			if slices.Contains(ids, id) {
				return nil, invalid(p+".id", "%s.id: %d is listed twice", p, id)
			}
			ids = append(ids, id)
		}
		val = ids
	case kindMergeFields:
		mf, aerr := decodeMergeFields(v, path)
		if aerr != nil {
			return nil, aerr
		}
		val = mf
	default:
		return nil, &apiError{Status: http.StatusInternalServerError, Message: "field " + f.name + " has no decoder"}
	}
	if f.check != nil {
		if msg := f.check(val); msg != "" {
			return nil, invalid(path, "%s: %s", path, msg)
		}
	}
	return val, nil
}

// decodeIDObject reads {id} (and, for a ref, an optional self that is
// ignored: the service makes self links). The id must be a positive integer.
func decodeIDObject(v any, path string, ref bool) (int64, *apiError) {
	want := "an object {id: integer}"
	if ref {
		want = "a ref {id: integer, self: string}"
	}
	m, ok := v.(map[string]any)
	if !ok {
		return 0, invalid(path, "%s must be %s, got %s", path, want, describe(v))
	}
	for _, k := range sortedKeys(m) {
		switch {
		case k == "id":
		case k == "self" && ref:
			if _, ok := m[k].(string); !ok {
				return 0, invalid(path+".self", "%s.self must be a string, got %s", path, describe(m[k]))
			}
		default:
			return 0, invalid(path+"."+k, "unknown field %s.%s; %s is %s", path, k, path, want)
		}
	}
	raw, ok := m["id"]
	if !ok {
		return 0, invalid(path+".id", "%s.id is required", path)
	}
	id, ok := asInt(raw)
	if !ok || id <= 0 {
		return 0, invalid(path+".id", "%s.id must be a positive integer, got %s", path, show(raw))
	}
	return id, nil
}

func decodeMergeFields(v any, path string) ([]mergeField, *apiError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, invalid(path, "%s must be an array, got %s", path, describe(v))
	}
	out := make([]mergeField, 0, len(arr))
	for i, e := range arr {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, invalid(p, "%s must be an object {id, type: {id}, value}, got %s", p, describe(e))
		}
		for _, k := range sortedKeys(m) {
			if k != "id" && k != "type" && k != "value" {
				return nil, invalid(p+"."+k, "unknown field %s.%s", p, k)
			}
		}
		var mf mergeField
		raw, ok := m["id"]
		if !ok {
			return nil, invalid(p+".id", "%s.id is required", p)
		}
		if mf.ID, ok = asInt(raw); !ok || mf.ID <= 0 {
			return nil, invalid(p+".id", "%s.id must be a positive integer, got %s", p, show(raw))
		}
		t, ok := m["type"]
		if !ok {
			return nil, invalid(p+".type", "%s.type is required", p)
		}
		id, aerr := decodeIDObject(t, p+".type", false)
		if aerr != nil {
			return nil, aerr
		}
		mf.Type.ID = id
		if mf.Value, ok = m["value"].(string); !ok {
			return nil, invalid(p+".value", "%s.value must be a string, got %s", p, describe(m["value"]))
		}
		out = append(out, mf)
	}
	return out, nil
}

// asInt accepts a JSON integer literal only: not 1.5, 1.0, 1e3 or "1".
func asInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// describe names the JSON type of a decoded value, for error messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// show renders a scalar value for an error message, or describes it.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return describe(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
