package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Style is how the sandbox writes its successful /v3 answers. The spec
// shows no response bodies, so a real service may write the same data
// less tidily than the strict style does; the loose style stands for such
// a service, for testing clients against it. Requests are validated the
// same way in both styles, and error answers are the same.
type Style string

// Styles of [Options].Style.
const (
	// StyleStrict (the default) writes answers in the shapes of the wire
	// conventions: integer ids, timestamps as YYYY-MM-DD HH:MM:SS, absent
	// fields left out, template flags as booleans.
	StyleStrict Style = "strict"
	// StyleLoose writes the same data as an untidy service might: ids and
	// other numbers as strings, timestamps in RFC 3339 with a fraction and
	// a +02:00 zone, booleans as 0 and 1, null for some absent fields,
	// fields nobody asked for, paging numbers as strings, and template
	// flags as lists (required: the operations, searchable: the types).
	StyleLoose Style = "loose"
)

// ParseStyle reads a style name; empty is [StyleStrict].
func ParseStyle(s string) (Style, error) {
	switch Style(s) {
	case "", StyleStrict:
		return StyleStrict, nil
	case StyleLoose:
		return StyleLoose, nil
	}
	return "", fmt.Errorf("style %q: want %s or %s", s, StyleStrict, StyleLoose)
}

// String returns the style's name.
func (s Style) String() string { return string(s) }

// Set implements flag.Value.
func (s *Style) Set(v string) error {
	p, err := ParseStyle(v)
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// loosen rewrites an answer body in the loose style. It works on the
// answer's JSON, so it applies to every endpoint alike.
func loosen(body any) (any, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	out := loosenValue(v, "")
	if top, ok := out.(map[string]any); ok {
		top["meta"] = map[string]any{"style": string(StyleLoose), "api_version": "3.0"}
	}
	return out, nil
}

// loosenValue rewrites v, the value of key, and what it holds.
func loosenValue(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = loosenValue(e, k)
		}
		if id, ok := x["id"]; ok {
			if _, isResource := x["self"]; isResource && len(x) > 2 {
				// Null for fields absent from the resource: fields of its
				// type left unset, and some that no type has.
				for _, k := range [...]string{"summary", "image_url", "external_id", "more_button_text", "description"} {
					if _, has := x[k]; !has {
						x[k] = nil
					}
				}
				x["legacy_key"] = fmt.Sprintf("sb-%v", id)
				x["_links"] = map[string]any{"self": map[string]any{"href": x["self"]}}
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = loosenValue(e, key)
		}
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		if strings.HasSuffix(key, "_utc") {
			if t, err := time.Parse(timestampLayout, x); err == nil {
				// Not in UTC, so that a client must convert it.
				return t.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.000Z07:00")
			}
		}
		return x
	}
	return v
}

// looseTemplateField is a template field in the loose style: flags as
// lists, as some services write them.
type looseTemplateField struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Searchable []string `json:"searchable"`
	Required   []string `json:"required"`
	ReadOnly   bool     `json:"read_only,omitempty"`
	CreateOnly bool     `json:"create_only,omitempty"`
	UpdateOnly bool     `json:"update_only,omitempty"`
}

// looseTemplate is the loose template body of typ: searchable lists the
// data types a field may be filtered on for (the four content types for
// content), required the operations it is required in.
func looseTemplate(typ string, sc *schema) map[string]any {
	types := []string{typ}
	if typ == collContent {
		types = []string{"story", "event", "link", "need"}
	}
	fields := make([]looseTemplateField, len(sc.fields))
	for i, f := range sc.fields {
		lf := looseTemplateField{
			Name: f.name, Type: f.kind.String(), Searchable: []string{}, Required: []string{},
			ReadOnly: f.access == accessRead, CreateOnly: f.access == accessCreate, UpdateOnly: f.access == accessUpdate,
		}
		if f.searchable {
			lf.Searchable = types
		}
		if f.required {
			lf.Required = append(lf.Required, "create")
		}
		if f.requiredOnUpdate {
			lf.Required = append(lf.Required, "update")
		}
		fields[i] = lf
	}
	return data(map[string]any{"type": typ, "fields": fields})
}
