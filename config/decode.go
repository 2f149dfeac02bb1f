package config

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The file is decoded by walking yaml.Node trees instead of calling
// yaml.Unmarshal: yaml.Unmarshal stops at the first error and its errors
// carry no field path, while the walker records every key's line, reports
// every problem, expands ${VAR} in scalar values after parsing, and types
// each value by its key rather than by YAML's guess from its text.

// aliasBudget bounds how many values one decode may visit: ten times the
// nodes written in the file, plus some slack. Aliases referring to aliases
// (the "billion laughs" file) could otherwise make a small file expand
// without end; a file that shares settings through anchors stays far
// below it.
func aliasBudget(root *yaml.Node) int {
	return 10*countNodes(root) + 10_000
}

// countNodes counts the nodes of n as written, not following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, child := range n.Content {
		c += countNodes(child)
	}
	return c
}

// yamlField is one key of a struct as the file spells it; inline structs
// are flattened, so Feed has the keys of FeedSettings and Mapping too.
type yamlField struct {
	Key   string
	Index []int
}

// yamlFields lists t's keys in declaration order.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			for _, sub := range yamlFields(f.Type) {
				out = append(out, yamlField{Key: sub.Key, Index: append([]int{i}, sub.Index...)})
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, yamlField{Key: name, Index: []int{i}})
	}
	return out
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// decoder holds the state of one decode.
type decoder struct {
	file   string
	lookup func(string) (string, bool)
	probs  *Problems
	// lines maps each field path seen in the file to its key's line.
	lines map[string]int
	// set holds the paths that have a value (not null): the section keys
	// without pointers use it to tell "not set" from a zero value.
	set map[string]bool
	// nodes counts visited nodes against budget.
	nodes, budget int
	// active holds the anchored nodes being expanded through an alias, so
	// an anchor that contains an alias to itself is refused, not followed.
	active map[*yaml.Node]bool
	fields map[reflect.Type]map[string][]int
	// broken holds the paths whose value could not be decoded: checking
	// them, or what is below them, would only repeat the problem.
	broken map[string]bool
}

func newDecoder(file string, lookup func(string) (string, bool), probs *Problems) *decoder {
	return &decoder{
		file:   file,
		lookup: lookup,
		probs:  probs,
		lines:  map[string]int{},
		set:    map[string]bool{},
		active: map[*yaml.Node]bool{},
		fields: map[reflect.Type]map[string][]int{},
		broken: map[string]bool{},
	}
}

func (d *decoder) problem(line int, field, format string, args ...any) {
	d.probs.at(d.file, line, field, format, args...)
	d.broken[field] = true
}

// decode stores n into v and reports whether n held a value (false for
// null, for an expansion that came out empty, and after a problem).
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) bool {
	d.nodes++
	if d.nodes > d.budget {
		if d.nodes == d.budget+1 {
			d.problem(n.Line, path, "the file expands to more than %d values through aliases", d.budget)
		}
		return false
	}
	if n.Kind == yaml.AliasNode {
		if d.active[n.Alias] {
			d.problem(n.Line, path, "alias *%s refers to a value that contains it", n.Value)
			return false
		}
		d.active[n.Alias] = true
		defer delete(d.active, n.Alias)
		return d.decode(n.Alias, v, path)
	}

	if reflect.PointerTo(v.Type()).Implements(textUnmarshalerType) {
		return d.text(n, v, path)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			return false
		}
		p := reflect.New(v.Type().Elem())
		if !d.decode(n, p.Elem(), path) {
			return false
		}
		v.Set(p)
		return true
	case reflect.Struct:
		return d.mapping(n, v, path)
	case reflect.Slice:
		return d.sequence(n, v, path)
	case reflect.Map:
		return d.dict(n, v, path)
	default:
		return d.scalar(n, v, path)
	}
}

// isNull reports whether n is written as null: nothing, ~ or null.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

func (d *decoder) fieldsOf(t reflect.Type) map[string][]int {
	if m, ok := d.fields[t]; ok {
		return m
	}
	m := map[string][]int{}
	for _, f := range yamlFields(t) {
		m[f.Key] = f.Index
	}
	d.fields[t] = m
	return m
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// mapping decodes a YAML mapping into the struct v, refusing unknown and
// repeated keys.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.MappingNode {
		d.problem(n.Line, path, "want a mapping of keys, got %s", kindName(n))
		return false
	}
	fields := d.fieldsOf(v.Type())

	// Merge keys (<<: *base) come first whatever their position, so that
	// the mapping's own keys win, as the YAML merge key spec says.
	merged := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMergeKey(n.Content[i]) {
			d.merge(n.Content[i+1], v, path)
			merged = true
		}
	}

	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.problem(k.Line, path, "keys must be plain names, got %s", kindName(k))
			continue
		}
		key := k.Value
		p := joinPath(path, key)
		if first, dup := seen[key]; dup {
			d.problem(k.Line, p, "duplicate key (first at line %d)", first)
			continue
		}
		seen[key] = k.Line
		index, ok := fields[key]
		if !ok && path == "" && strings.HasPrefix(key, "x-") {
			continue // a place for anchors, as in Compose files
		}
		if !ok {
			d.problem(k.Line, p, "unknown key%s", suggest(key, fields))
			continue
		}
		d.lines[p] = k.Line
		f := v.FieldByIndex(index)
		if merged {
			// The key replaces what a merge put there, as a whole.
			f.Set(reflect.Zero(f.Type()))
			d.forget(p)
		}
		if d.decode(val, f, p) {
			d.set[p] = true
		}
	}
	return true
}

// merge applies the value of a << key: a mapping, or a list of mappings of
// which the earlier ones win.
func (d *decoder) merge(n *yaml.Node, v reflect.Value, path string) {
	target := n
	if target.Kind == yaml.AliasNode {
		target = target.Alias
	}
	if target.Kind == yaml.SequenceNode {
		for i := len(target.Content) - 1; i >= 0; i-- {
			d.merge(target.Content[i], v, path)
		}
		return
	}
	if target.Kind != yaml.MappingNode {
		d.problem(n.Line, path, "<< must merge a mapping or a list of mappings, got %s", kindName(target))
		return
	}
	d.decode(n, v, path)
}

// forget drops what the decoder recorded under p and below it.
func (d *decoder) forget(p string) {
	for q := range d.set {
		if q == p || strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[") {
			delete(d.set, q)
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// sequence decodes a YAML list into the slice v. An explicit empty list
// gives an empty, non-nil slice: it is set, and overrides an inherited list.
func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.SequenceNode {
		d.problem(n.Line, path, "want a list, got %s", kindName(n))
		return false
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.lines[p] = item.Line
		d.decode(item, s.Index(i), p)
	}
	v.Set(s)
	return true
}

// dict decodes a YAML mapping into the map v. Its keys are data (source
// category names), so they are taken as written and not expanded.
func (d *decoder) dict(n *yaml.Node, v reflect.Value, path string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.MappingNode {
		d.problem(n.Line, path, "want a mapping, got %s", kindName(n))
		return false
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isMergeKey(k) {
			d.problem(k.Line, path, "keys must be plain values, got %s", kindName(k))
			continue
		}
		p := joinPath(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.problem(k.Line, p, "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		d.lines[p] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, elem, p)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(m)
	return true
}

// value returns the expanded text of the scalar n, or false when n is not a
// scalar, is null, has a bad reference, or holds references that expanded
// to nothing (so that ${VAR:-} means "use the default").
func (d *decoder) value(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.problem(n.Line, path, "want a single value, got %s", kindName(n))
		return "", false
	}
	if isNull(n) {
		return "", false
	}
	s, referenced, errs := expand(n.Value, d.lookup)
	for _, e := range errs {
		d.problem(n.Line, path, "%s", e)
	}
	if len(errs) > 0 || referenced && s == "" {
		return "", false
	}
	return s, true
}

// text decodes a value whose type parses itself (Duration, ByteSize).
func (d *decoder) text(n *yaml.Node, v reflect.Value, path string) bool {
	s, ok := d.value(n, path)
	if !ok {
		return false
	}
	if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		d.problem(n.Line, path, "%v", err)
		return false
	}
	// ParseDuration takes "NaNd" and "1e300d" without complaint; both end
	// up negative once converted, and no setting means a negative span.
	if v.CanInt() && v.Int() < 0 {
		d.problem(n.Line, path, "invalid value %q: out of range", s)
		return false
	}
	return true
}

// scalar decodes the plain kinds. Values are typed by their key, not by how
// YAML would resolve the text: a quoted "10" is fine for a number and 0123
// stays "0123" for a string. Booleans are true or false only; YAML 1.1's
// yes/no/on/off are refused rather than guessed at.
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) bool {
	s, ok := d.value(n, path)
	if !ok {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		switch strings.ToLower(s) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.problem(n.Line, path, "want true or false, got %q", s)
			return false
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			d.problem(n.Line, path, "want a whole number, got %q", s)
			return false
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.problem(n.Line, path, "want a number, got %q", s)
			return false
		}
		v.SetFloat(f)
	default:
		// Only reachable when schema.go gains a field of a new kind;
		// TestDecodeEveryField makes that a test failure first.
		d.problem(n.Line, path, "cannot decode into %s", v.Type())
		return false
	}
	return true
}

// suggest returns ` (did you mean "x"?)` for the known key closest to an
// unknown one, when it is close enough to be a likely typo.
func suggest(key string, fields map[string][]int) string {
	best, bestDist := "", 3
	for k := range fields {
		if dist := editDistance(key, k); dist < bestDist || dist == bestDist && best != "" && k < best {
			best, bestDist = k, dist
		}
	}
	if best == "" || bestDist > len(key)/2 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
