package feeds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// JSON Feed documents are read leniently: one field of the wrong JSON type
// (tags as a string, an id as a number, an author as a bare name, null
// anywhere) must not lose the whole feed, as it would in gofeed's strict
// struct decoding. normalizeJSONFeed rewrites the document into the shape
// the JSON Feed 1.1 spec gives each known field, coercing what can be
// coerced and dropping what cannot, and hands the result to gofeed, which
// keeps its own mapping of the fields onto the universal Feed.

// jsonVersion11 is given to documents that are almost JSON Feed: a JSON
// object with an items list but no jsonfeed.org version.
const jsonVersion11 = "https://jsonfeed.org/version/1.1"

// jsonKind is the JSON type the spec gives a field.
type jsonKind int

const (
	kString      jsonKind = iota // a string
	kStrings                     // a list of strings (tags)
	kBool                        // a boolean (expired)
	kNumber                      // a number (size_in_bytes)
	kAuthor                      // an author object
	kAuthors                     // a list of author objects
	kAttachments                 // a list of attachment objects
	kHubs                        // a list of hub objects
	kItems                       // the list of items
)

// The known fields of each JSON Feed object, 1.0 and 1.1 together. Unknown
// fields (extensions start with "_") are dropped: gofeed ignores them.
var (
	jsonFeedFields = map[string]jsonKind{
		"version": kString, "title": kString, "home_page_url": kString, "feed_url": kString,
		"description": kString, "user_comment": kString, "next_url": kString, "icon": kString,
		"favicon": kString, "author": kAuthor, "authors": kAuthors, "language": kString,
		"expired": kBool, "hubs": kHubs, "items": kItems,
	}
	jsonItemFields = map[string]jsonKind{
		"id": kString, "url": kString, "external_url": kString, "title": kString,
		"content_html": kString, "content_text": kString, "summary": kString, "image": kString,
		"banner_image": kString, "date_published": kString, "date_modified": kString,
		"author": kAuthor, "authors": kAuthors, "tags": kStrings, "language": kString,
		"attachments": kAttachments,
	}
	jsonAuthorFields     = map[string]jsonKind{"name": kString, "url": kString, "avatar": kString}
	jsonAttachmentFields = map[string]jsonKind{
		"url": kString, "mime_type": kString, "title": kString,
		"size_in_bytes": kNumber, "duration_in_seconds": kNumber,
	}
	jsonHubFields = map[string]jsonKind{"type": kString, "url": kString}
)

// normalizeJSONFeed returns doc rewritten so that every known field has the
// type the spec gives it. A document that is not a JSON object, or an
// object with neither a jsonfeed.org version nor an items list, is not a
// JSON Feed and is an error.
func normalizeJSONFeed(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("json document: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("json document is not an object")
	}
	version, _ := coerceJSONString(obj["version"])
	_, hasItems := obj["items"]
	if !strings.Contains(version, "jsonfeed.org") {
		if !hasItems {
			// An API error, "RSS in JSON" or anything else that would
			// otherwise look like a feed with no items.
			return nil, errors.New("json document is not a JSON Feed (no jsonfeed.org version and no items)")
		}
		obj["version"] = jsonVersion11
	}
	out := coerceJSONObject(obj, jsonFeedFields)
	if _, ok := out["items"]; !ok {
		out["items"] = []any{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("re-encode json feed: %w", err)
	}
	return b, nil
}

// coerceJSONObject keeps the known fields of obj, each coerced to its kind;
// a field that cannot be coerced is dropped.
func coerceJSONObject(obj map[string]any, fields map[string]jsonKind) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		kind, known := fields[k]
		if !known {
			continue
		}
		if c, ok := coerceJSON(v, kind); ok {
			out[k] = c
		}
	}
	return out
}

// coerceJSON turns v into a value of kind, or reports that it cannot.
func coerceJSON(v any, kind jsonKind) (any, bool) {
	switch kind {
	case kString:
		return coerceJSONString(v)
	case kStrings:
		return coerceJSONStrings(v)
	case kBool:
		return coerceJSONBool(v)
	case kNumber:
		return coerceJSONNumber(v)
	case kAuthor:
		return coerceJSONAuthor(v)
	case kAuthors:
		return coerceJSONList(v, coerceJSONAuthor)
	case kAttachments:
		return coerceJSONList(v, func(e any) (any, bool) {
			if s, ok := coerceJSONString(e); ok && s != "" {
				return map[string]any{"url": s}, true // a bare URL
			}
			return coerceJSONFields(e, jsonAttachmentFields)
		})
	case kHubs:
		return coerceJSONList(v, func(e any) (any, bool) { return coerceJSONFields(e, jsonHubFields) })
	case kItems:
		return coerceJSONList(v, func(e any) (any, bool) { return coerceJSONFields(e, jsonItemFields) })
	}
	return nil, false
}

// coerceJSONString accepts a string, a number or a boolean as its text, and
// a list by its first element that is one of those.
func coerceJSONString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool:
		return strconv.FormatBool(t), true
	case []any:
		for _, e := range t {
			if s, ok := coerceJSONString(e); ok && s != "" {
				return s, true
			}
		}
	}
	return "", false
}

// coerceJSONStrings accepts a list (its elements coerced, the rest
// dropped), or one string, which may be a comma-separated list of tags.
func coerceJSONStrings(v any) ([]string, bool) {
	switch t := v.(type) {
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if _, nested := e.([]any); nested {
				continue
			}
			if s, ok := coerceJSONString(e); ok && strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
		return out, len(out) > 0
	case string:
		var out []string
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, len(out) > 0
	case json.Number, bool:
		s, _ := coerceJSONString(t)
		return []string{s}, true
	}
	return nil, false
}

// coerceJSONBool accepts a boolean, "true"/"false" (or 1/0) as a string, or
// a number (non-zero is true).
func coerceJSONBool(v any) (bool, bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(t))
		return b, err == nil
	case json.Number:
		f, err := t.Float64()
		return f != 0, err == nil
	}
	return false, false
}

// coerceJSONNumber accepts a number or a numeric string and returns a
// non-negative whole number; gofeed reads these fields as int64.
func coerceJSONNumber(v any) (json.Number, bool) {
	var s string
	switch t := v.(type) {
	case json.Number:
		s = t.String()
	case string:
		s = strings.TrimSpace(t)
	default:
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > math.MaxInt64/2 {
		return "", false
	}
	return json.Number(strconv.FormatInt(int64(f), 10)), true
}

// coerceJSONAuthor accepts an author object, a bare name, or a list (its
// first author).
func coerceJSONAuthor(v any) (any, bool) {
	switch t := v.(type) {
	case string, json.Number:
		s, _ := coerceJSONString(t)
		if strings.TrimSpace(s) == "" {
			return nil, false
		}
		return map[string]any{"name": s}, true
	case []any:
		for _, e := range t {
			if a, ok := coerceJSONAuthor(e); ok {
				return a, true
			}
		}
		return nil, false
	}
	return coerceJSONFields(v, jsonAuthorFields)
}

// coerceJSONFields accepts an object and coerces its known fields.
func coerceJSONFields(v any, fields map[string]jsonKind) (any, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	return coerceJSONObject(obj, fields), true
}

// coerceJSONList accepts a list (each element coerced by one, the rest
// dropped) or a single element standing for a list of one.
func coerceJSONList(v any, one func(any) (any, bool)) ([]any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			if c, ok := one(e); ok {
				out = append(out, c)
			}
		}
		return out, true
	}
	if c, ok := one(v); ok {
		return []any{c}, true
	}
	return nil, false
}
