package acs

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter operators (spec 2.9).
const (
	OpEq     = "eq"
	OpNeq    = "neq"
	OpLt     = "lt"
	OpLte    = "lte"
	OpGt     = "gt"
	OpGte    = "gte"
	OpIn     = "in"
	OpIsNull = "isnull"
)

// Filter builds the filters_json object of a list request: a JSON object
// mapping a property to one operator and its value. Build it by chaining:
//
//	acs.Filter{}.Eq("external_id", "feed-1:abc").Gte("date_modified_utc", t)
//
// Each method returns a new Filter; the receiver is not changed, so a base
// filter can be extended in several ways. Values may be strings, numbers,
// booleans, [Timestamp] or time.Time (sent as a Timestamp). The spec allows
// one operator per property, so naming a property twice makes the request
// fail with [ErrInvalid]. Only fields the data type's template marks
// searchable may be used; see [WithFilterCheck].
type Filter struct {
	terms []filterTerm
}

type filterTerm struct {
	field string
	op    string
	value any
}

func (f Filter) with(field, op string, v any) Filter {
	// Clip so that two filters built from the same base never share, and
	// overwrite, one backing array.
	return Filter{terms: append(slices.Clip(f.terms), filterTerm{field, op, v})}
}

// Eq matches entries whose field equals v.
func (f Filter) Eq(field string, v any) Filter { return f.with(field, OpEq, v) }

// Neq matches entries whose field does not equal v.
func (f Filter) Neq(field string, v any) Filter { return f.with(field, OpNeq, v) }

// Lt matches entries whose field is less than v.
func (f Filter) Lt(field string, v any) Filter { return f.with(field, OpLt, v) }

// Lte matches entries whose field is less than or equal to v.
func (f Filter) Lte(field string, v any) Filter { return f.with(field, OpLte, v) }

// Gt matches entries whose field is greater than v.
func (f Filter) Gt(field string, v any) Filter { return f.with(field, OpGt, v) }

// Gte matches entries whose field is greater than or equal to v.
func (f Filter) Gte(field string, v any) Filter { return f.with(field, OpGte, v) }

// In matches entries whose field is one of values. The spec's value is one
// string of comma-separated items, so an item containing a comma cannot be
// expressed and fails the request with [ErrInvalid].
func (f Filter) In(field string, values ...any) Filter { return f.with(field, OpIn, values) }

// IsNull matches entries whose field is null (null true) or not null (null
// false).
func (f Filter) IsNull(field string, null bool) Filter { return f.with(field, OpIsNull, null) }

// IsZero reports whether the filter has no terms.
func (f Filter) IsZero() bool { return len(f.terms) == 0 }

// Fields returns the filtered property names, in the order they were added.
func (f Filter) Fields() []string {
	names := make([]string, 0, len(f.terms))
	for _, t := range f.terms {
		names = append(names, t.field)
	}
	return names
}

// MarshalJSON writes the filters_json object, properties in the order they
// were added. Errors match [ErrInvalid].
func (f Filter) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := make(map[string]bool, len(f.terms))
	for i, t := range f.terms {
		if t.field == "" {
			return nil, invalid("filters_json", "empty property name")
		}
		if seen[t.field] {
			return nil, invalid("filters_json."+t.field, "property filtered twice; the spec allows one operator per property")
		}
		seen[t.field] = true
		v, err := filterValue(t)
		if err != nil {
			return nil, err
		}
		val, err := marshal(v)
		if err != nil {
			return nil, invalid("filters_json."+t.field, "value: %v", err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := marshal(t.field) // a string always marshals
		fmt.Fprintf(&b, `%s:{"%s":%s}`, key, t.op, val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// String returns the filters_json text, or a note of why it cannot be
// built.
func (f Filter) String() string {
	b, err := f.MarshalJSON()
	if err != nil {
		return "invalid filter: " + err.Error()
	}
	return string(b)
}

// filterValue turns a term's value into what is sent.
func filterValue(t filterTerm) (any, error) {
	if t.op != OpIn {
		return scalarValue(t.value), nil
	}
	values, _ := t.value.([]any) // In always stores a []any
	if len(values) == 0 {
		return nil, invalid("filters_json."+t.field, "in needs at least one value")
	}
	items := make([]string, len(values))
	for i, v := range values {
		s, err := inItem(scalarValue(v))
		if err != nil {
			return nil, invalid("filters_json."+t.field, "%v", err)
		}
		if strings.Contains(s, ",") {
			return nil, invalid("filters_json."+t.field, "in item %q contains a comma, the list separator", s)
		}
		items[i] = s
	}
	return strings.Join(items, ","), nil
}

// scalarValue sends a time.Time in the spec's timestamp shape rather than
// RFC 3339, which the service would not compare as a date.
func scalarValue(v any) any {
	switch t := v.(type) {
	case time.Time:
		return NewTimestamp(t)
	case *time.Time:
		if t != nil {
			return NewTimestamp(*t)
		}
	}
	return v
}

// inItem writes one item of an in list as text.
func inItem(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case Timestamp:
		if err := x.validate(); err != nil {
			return "", err
		}
		return x.String(), nil
	case int:
		return strconv.Itoa(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case fmt.Stringer:
		return x.String(), nil
	}
	return "", fmt.Errorf("in item of type %T: want a string, number, boolean or timestamp", v)
}
