package sandbox

import (
	"cmp"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Paging limits (spec 4.1 and 8; the maximum is the wire conventions' choice).
const (
	defaultPageSize = 100
	// MaxPageSize is the largest page_size a list accepts; above it the
	// answer is 400.
	MaxPageSize = 500
)

// The eight operators of spec 2.9.
const (
	opEq     = "eq"
	opNeq    = "neq"
	opLt     = "lt"
	opLte    = "lte"
	opGt     = "gt"
	opGte    = "gte"
	opIn     = "in"
	opIsNull = "isnull"
)

// cond is one property of filters_json: a searchable field, an operator
// and the value, typed like the field's stored values.
type cond struct {
	f    *field
	op   string
	val  any   // eq, neq, lt, lte, gt, gte
	set  []any // in
	null bool  // isnull
}

// listQuery is a parsed list request.
type listQuery struct {
	page, size int
	conds      []cond
}

// parseList reads page, page_size and filters_json (spec 4.1) and refuses any
// other parameter, a repeated one, and filters on fields sc does not mark
// searchable.
func parseList(q url.Values, sc *schema) (listQuery, *apiError) {
	lq := listQuery{page: 1, size: defaultPageSize}
	for _, name := range sortedKeys(q) {
		vals := q[name]
		if len(vals) != 1 {
			return lq, invalid(name, "query parameter %s given %d times", name, len(vals))
		}
		v := vals[0]
		switch name {
		case "page":
			n, ok := positive(v)
			if !ok {
				return lq, invalid(name, "page must be a positive integer, got %q", v)
			}
			lq.page = n
		case "page_size":
			n, ok := positive(v)
			if !ok {
				return lq, invalid(name, "page_size must be a positive integer, got %q", v)
			}
			if n > MaxPageSize {
				return lq, invalid(name, "page_size must be at most %d, got %d", MaxPageSize, n)
			}
			lq.size = n
		case "filters_json":
			conds, aerr := parseFilters(v, sc)
			if aerr != nil {
				return lq, aerr
			}
			lq.conds = conds
		default:
			return lq, invalid(name, "unknown query parameter %s; lists take page, page_size and filters_json", name)
		}
	}
	return lq, nil
}

// positive parses decimal digits only: no sign, no spaces.
func positive(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

func parseFilters(s string, sc *schema) ([]cond, *apiError) {
	const param = "filters_json"
	v, aerr := decodeJSON([]byte(s), param)
	if aerr != nil {
		if aerr.Field != param {
			aerr.Field = param + "." + aerr.Field
		}
		return nil, aerr
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, invalid(param, "filters_json must be a JSON object {property: {operator: value}}, got %s", describe(v))
	}
	var conds []cond
	for _, prop := range sortedKeys(obj) {
		name := param + "." + prop
		f := sc.field(prop)
		if f == nil {
			return nil, invalid(name, "%s has no property %s", sc.name, prop)
		}
		if !f.searchable {
			return nil, invalid(name, "%s of %s is not searchable; its template lists the searchable fields", prop, sc.name)
		}
		spec, ok := obj[prop].(map[string]any)
		if !ok || len(spec) != 1 {
			return nil, invalid(name, "%s must be an object with exactly one operator, such as {\"eq\": ...}", name)
		}
		var c cond
		for op, val := range spec {
			var aerr *apiError
			c, aerr = parseCond(f, op, val, name)
			if aerr != nil {
				return nil, aerr
			}
		}
		conds = append(conds, c)
	}
	return conds, nil
}

func parseCond(f *field, op string, v any, name string) (cond, *apiError) {
	c := cond{f: f, op: op}
	switch op {
	case opIsNull:
		b, ok := v.(bool)
		if !ok {
			return c, invalid(name, "%s: isnull takes a boolean, got %s", name, describe(v))
		}
		c.null = b
	case opIn:
		s, ok := v.(string)
		if !ok {
			return c, invalid(name, "%s: in takes one string of comma-separated items, got %s", name, describe(v))
		}
		for _, item := range strings.Split(s, ",") {
			x, ok := scalarFromText(f.kind, item)
			if !ok {
				return c, invalid(name, "%s: in item %q is not a %s", name, item, f.kind)
			}
			c.set = append(c.set, x)
		}
	case opEq, opNeq, opLt, opLte, opGt, opGte:
		if f.kind == kindBoolean && op != opEq && op != opNeq {
			return c, invalid(name, "%s: %s does not apply to a boolean", name, op)
		}
		x, ok := scalarFromJSON(f.kind, v)
		if !ok {
			return c, invalid(name, "%s: %s takes a %s, got %s", name, op, f.kind, show(v))
		}
		c.val = x
	default:
		return c, invalid(name, "%s: unknown operator %q; use eq, neq, lt, lte, gt, gte, in or isnull", name, op)
	}
	return c, nil
}

// scalarFromJSON converts a filter value to the stored type of kind k.
func scalarFromJSON(k kind, v any) (any, bool) {
	switch k {
	case kindString:
		s, ok := v.(string)
		return s, ok
	case kindTimestamp:
		s, ok := v.(string)
		return s, ok && validTimestamp(s)
	case kindInteger:
		return asInt(v)
	case kindBoolean:
		b, ok := v.(bool)
		return b, ok
	}
	return nil, false
}

// scalarFromText converts one item of an in list. Items are not trimmed: a
// space is part of a string value.
func scalarFromText(k kind, s string) (any, bool) {
	switch k {
	case kindString:
		return s, true
	case kindTimestamp:
		return s, validTimestamp(s)
	case kindInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case kindBoolean:
		b, err := strconv.ParseBool(s)
		return b, err == nil && (s == "true" || s == "false")
	}
	return nil, false
}

// match reports whether a record's value satisfies c. As in SQL, a missing
// value satisfies only isnull true: it is neither equal nor unequal to
// anything.
func (c cond) match(v any, present bool) bool {
	if c.op == opIsNull {
		return present != c.null
	}
	if !present {
		return false
	}
	switch c.op {
	case opIn:
		for _, x := range c.set {
			if compare(v, x) == 0 {
				return true
			}
		}
		return false
	case opEq:
		return compare(v, c.val) == 0
	case opNeq:
		return compare(v, c.val) != 0
	case opLt:
		return compare(v, c.val) < 0
	case opLte:
		return compare(v, c.val) <= 0
	case opGt:
		return compare(v, c.val) > 0
	case opGte:
		return compare(v, c.val) >= 0
	}
	return false
}

// compare orders two values of one scalar kind. Timestamps compare as
// strings, which their fixed shape makes chronological.
func compare(a, b any) int {
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case int64:
		return cmp.Compare(x, b.(int64))
	case bool:
		if x == b.(bool) {
			return 0
		}
		return 1 // booleans are only tested for (in)equality
	}
	panic(fmt.Sprintf("sandbox: compare %T", a)) // schemas mark only scalar fields searchable
}

// apply filters recs, already in list order, and cuts out the page.
func (lq listQuery) apply(recs []*record) (page []*record, total int) {
	matched := recs[:0:0]
	for _, r := range recs {
		ok := true
		for _, c := range lq.conds {
			v, present := r.get(c.f.name)
			if !c.match(v, present) {
				ok = false
				break
			}
		}
		if ok {
			matched = append(matched, r)
		}
	}
	// Compare before multiplying: page may be large enough to overflow.
	if lq.page-1 > len(matched)/lq.size {
		return nil, len(matched)
	}
	start := (lq.page - 1) * lq.size
	if start >= len(matched) {
		return nil, len(matched)
	}
	return matched[start:min(start+lq.size, len(matched))], len(matched)
}
