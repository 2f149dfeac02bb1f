package acs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// pageMeta is the paging data a list answer may carry next to its data.
type pageMeta struct {
	Page     int
	PageSize int
	Total    int
}

// decode reads a 2xx body into v, a pointer to a struct or to a slice. The
// spec does not show response shapes, so it accepts every shape the wire
// conventions name, whatever the endpoint:
//
//   - a bare object or a bare array;
//   - {"data": object-or-array, ...}, with optional page, page_size, total;
//   - the request envelope {"template": {"version": "3.0", "data": [...]}}.
//
// Unknown fields are ignored. An object where a list is expected is a list
// of one; an array where one object is expected must hold at most one. A
// bare object that itself has a top-level "data" or "template" key would be
// taken as wrapped; no resource of the spec has such a field.
//
// Values are read by lenient (tolerant.go). found is false when the body
// holds nothing (empty, null, empty data).
func decode(body []byte, v any) (found bool, meta pageMeta, err error) {
	payload := bytes.TrimSpace(body)
	if len(payload) == 0 {
		return false, meta, nil
	}
	if r, isRef := v.(*Ref); isRef {
		if ref, ok := scanRef(payload); ok {
			*r = ref
			return true, meta, nil
		}
	}
	found, meta, ok, valueErr := decodeData(payload, v)
	if ok {
		return found, meta, nil
	}
	if payload[0] == '{' {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(payload, &top); err != nil {
			return false, meta, fmt.Errorf("not JSON: %w", err)
		}
		if t, ok := top["template"]; ok {
			var env struct {
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(t, &env); err != nil {
				return false, meta, fmt.Errorf("envelope: %w", err)
			}
			payload = env.Data
		} else if d, ok := top["data"]; ok {
			payload = d
			// Paging data is informative only, so an odd type is ignored
			// rather than failing a good answer.
			meta = pageMeta{readPage(top["page"]), readPage(top["page_size"]), readPage(top["total"])}
		}
		payload = bytes.TrimSpace(payload)
	}
	if len(payload) == 0 || string(payload) == "null" {
		return false, meta, nil
	}

	if w, ok := v.(wholeAnswer); ok {
		// It reads any shape itself (a template may be a list of fields).
		if err := w.UnmarshalJSON(payload); err != nil {
			return false, meta, err
		}
		return true, meta, nil
	}
	rv := reflect.ValueOf(v).Elem()
	wantList := rv.Kind() == reflect.Slice
	switch {
	case wantList && payload[0] == '{':
		elem := reflect.New(rv.Type().Elem())
		if err := lenient(payload, elem.Interface()); err != nil {
			return false, meta, err
		}
		rv.Set(reflect.Append(rv, elem.Elem()))
		return true, meta, nil
	case !wantList && payload[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(payload, &items); err != nil {
			return false, meta, fmt.Errorf("not JSON: %w", err)
		}
		switch len(items) {
		case 0:
			return false, meta, nil
		case 1:
			payload = items[0]
		default:
			return false, meta, fmt.Errorf("want one object, got an array of %d", len(items))
		}
	}
	read := lenient
	if valueErr {
		// The fast path already found a value of the wrong type inside
		// the data: reading it strictly again would fail again.
		read = tolerant
	}
	if err := read(payload, v); err != nil {
		return false, meta, err
	}
	if wantList && rv.Len() == 0 {
		return false, meta, nil
	}
	return true, meta, nil
}

// decodeData is decode's fast path for the usual shape, an object whose
// first key is "data" holding what v wants (an object for a struct, an
// array for a slice): it decodes in one pass, where the general path
// parses the body twice (the envelope, then the data). Each pass scans
// every byte of a content body, so this halves the cost of an answer. ok
// is false when the shape is another one; v is then left zero for the
// general path.
//
// valueErr reports that it failed on a value inside the data (a string
// id, say) rather than on the shape.
func decodeData(payload []byte, v any) (found bool, meta pageMeta, ok, valueErr bool) {
	if !firstKeyIsData(payload) {
		return false, meta, false, false
	}
	env := struct {
		Data     any             `json:"data"`
		Template json.RawMessage `json:"template"`
		Page     json.RawMessage `json:"page"`
		PageSize json.RawMessage `json:"page_size"`
		Total    json.RawMessage `json:"total"`
	}{Data: v} // encoding/json decodes into the pointer an interface holds
	rv := reflect.ValueOf(v).Elem()
	if err := json.Unmarshal(payload, &env); err != nil || env.Template != nil {
		// An array where one object is wanted, or the other way round, a
		// value of another type, or a body with a template too (which
		// wins): the general path.
		rv.SetZero()
		var te *json.UnmarshalTypeError
		deep := errors.As(err, &te) && strings.HasPrefix(te.Field, "data.") && env.Template == nil
		return false, meta, false, deep
	}
	// Paging data is informative only, as in decode.
	meta = pageMeta{readPage(env.Page), readPage(env.PageSize), readPage(env.Total)}
	if env.Data == nil { // "data": null
		return false, meta, true, false
	}
	if rv.Kind() == reflect.Slice && rv.Len() == 0 {
		return false, meta, true, false
	}
	return true, meta, true, false
}

// wholeAnswer is a target that reads the answer's data in any shape
// itself, object or array.
type wholeAnswer interface {
	json.Unmarshaler
	wholeAnswer()
}

// firstKeyIsData reports whether b is an object whose first key is "data".
func firstKeyIsData(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if !bytes.HasPrefix(b, []byte(`"data"`)) {
		return false
	}
	b = bytes.TrimLeft(b[len(`"data"`):], " \t\r\n")
	return len(b) > 0 && b[0] == ':'
}
