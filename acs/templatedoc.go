package acs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Reading template documents. The spec says the interface is
// self-describing but shows no template, so any reasonable shape is read:
//
//   - {"type": "story", "fields": [field, ...]}, with or without type;
//   - {"fields": {"title": field, ...}}: fields by name (a field may then
//     be just its type, "string");
//   - [field, ...]: a bare list, as in {"template": {"data": [...]}};
//   - a field is {"name", "type", "searchable", "required", "create",
//     "update"}, each flag a boolean (or 0/1, "true"/"false", "yes"/"no"),
//     a string naming operations or content types ("create,update"), a
//     list of them, or an object of them to booleans; read_only,
//     create_only and update_only narrow Create and Update.

// UnmarshalJSON reads a template document in any of the shapes above.
func (t *Template) UnmarshalJSON(b []byte) error {
	v, err := decodeTree(b)
	if err != nil {
		return err
	}
	*t = Template{}
	var fields any
	switch x := v.(type) {
	case []any:
		fields = x
	case map[string]any:
		if typ, ok := x["type"].(string); ok {
			t.Type = typ
		}
		fields = x["fields"]
		if fields == nil {
			return &fieldError{"fields", "missing: the template lists no fields"}
		}
	default:
		return &fieldError{"", fmt.Sprintf("%s is not a template", excerpt(v))}
	}
	switch x := fields.(type) {
	case []any:
		for i, f := range x {
			tf, err := readTemplateField(f, "")
			if err != nil {
				return prefix(fmt.Sprintf("fields[%d]", i), err)
			}
			t.Fields = append(t.Fields, tf)
		}
	case map[string]any:
		// Map order is random: keep the fields in name order.
		for _, name := range sortedKeys(x) {
			tf, err := readTemplateField(x[name], name)
			if err != nil {
				return prefix("fields."+name, err)
			}
			t.Fields = append(t.Fields, tf)
		}
	default:
		return &fieldError{"fields", fmt.Sprintf("%s is not a list of fields", excerpt(fields))}
	}
	return nil
}

func (*Template) wholeAnswer() {}

// UnmarshalJSON reads one field of a template (see [Template.UnmarshalJSON]).
func (f *TemplateField) UnmarshalJSON(b []byte) error {
	v, err := decodeTree(b)
	if err != nil {
		return err
	}
	tf, err := readTemplateField(v, "")
	if err != nil {
		return err
	}
	*f = tf
	return nil
}

// readTemplateField reads a field object; name is its key when the fields
// came as an object, and a bare string there is the field's type.
func readTemplateField(v any, name string) (TemplateField, error) {
	f := TemplateField{Name: name, Create: true, Update: true}
	if s, ok := v.(string); ok && name != "" {
		f.Type = s
		return f, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return f, &fieldError{"", fmt.Sprintf("%s is not a field", excerpt(v))}
	}
	if n, ok := m["name"].(string); ok && n != "" {
		f.Name = n
	}
	if f.Name == "" {
		return f, &fieldError{"name", "missing"}
	}
	if typ, ok := m["type"].(string); ok {
		f.Type = typ
	}
	flag := func(key string) (bool, []string, error) {
		on, list, ok := readFlag(m[key])
		if !ok {
			return false, nil, &fieldError{key, fmt.Sprintf("%s is not a flag (a boolean, a name or a list of names)", excerpt(m[key]))}
		}
		return on, list, nil
	}
	var err error
	if f.Searchable, f.SearchableFor, err = flag("searchable"); err != nil {
		return f, err
	}
	if f.Required, f.RequiredFor, err = flag("required"); err != nil {
		return f, err
	}
	// The names may also come apart from the flag, as TemplateField
	// marshals them.
	for key, list := range map[string]*[]string{"searchable_for": &f.SearchableFor, "required_for": &f.RequiredFor} {
		if m[key] == nil {
			continue
		}
		_, names, ok := readFlag(m[key])
		if !ok {
			return f, &fieldError{key, fmt.Sprintf("%s is not a list of names", excerpt(m[key]))}
		}
		*list = names
	}
	// A create or update flag given as a list names where the field may
	// be sent: it may be sent somewhere.
	if m["create"] != nil {
		if f.Create, _, err = flag("create"); err != nil {
			return f, err
		}
	}
	if m["update"] != nil {
		if f.Update, _, err = flag("update"); err != nil {
			return f, err
		}
	}
	for _, k := range [...]string{"read_only", "create_only", "update_only"} {
		on, _, err := flag(k)
		if err != nil {
			return f, err
		}
		if on {
			f.Create = f.Create && k == "create_only"
			f.Update = f.Update && k == "update_only"
		}
	}
	return f, nil
}

// readFlag reads a template flag: a boolean (or 0/1, "true"/"false",
// "yes"/"no"), a string of names separated by commas or spaces, a list of
// names, or an object of names to booleans. on is whether it holds for
// anything; list is the names, when it gave some. Absent or null is false.
func readFlag(v any) (on bool, list []string, ok bool) {
	switch x := v.(type) {
	case nil:
		return false, nil, true
	case bool, json.Number:
		b, ok := readBool(x)
		return b, nil, ok
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "1", "yes", "y", "on":
			return true, nil, true
		case "false", "0", "no", "n", "off", "none", "":
			return false, nil, true
		}
		list = strings.FieldsFunc(x, func(r rune) bool { return r == ',' || r == ' ' || r == '|' })
		return len(list) > 0, list, true
	case []any:
		for _, it := range x {
			s, isStr := it.(string)
			if !isStr {
				return false, nil, false
			}
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		return len(list) > 0, list, true
	case map[string]any:
		for _, k := range sortedKeys(x) {
			b, isBool := readBool(x[k])
			if !isBool {
				return false, nil, false
			}
			if b {
				list = append(list, k)
			}
		}
		return len(list) > 0, list, true
	}
	return false, nil, false
}

// holds reports whether a flag read by readFlag holds for name: a boolean
// flag holds for everything.
func holds(on bool, list []string, name string) bool {
	return on && (len(list) == 0 || slices.Contains(list, name))
}

// SearchableIn reports whether the field may be filtered on for dataType
// (a content type, or the template's own type).
func (f TemplateField) SearchableIn(dataType string) bool {
	return holds(f.Searchable, f.SearchableFor, dataType)
}

// RequiredIn reports whether the field is required for op ("create",
// "update") or a content type.
func (f TemplateField) RequiredIn(op string) bool {
	return holds(f.Required, f.RequiredFor, op)
}

// decodeTree decodes b into generic values, numbers as json.Number.
func decodeTree(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return v, nil
}

// prefix puts path in front of the path of a fieldError.
func prefix(path string, err error) error {
	if fe, ok := err.(*fieldError); ok {
		return &fieldError{joinPath(path, fe.path), fe.msg}
	}
	return fmt.Errorf("%s: %w", path, err)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
