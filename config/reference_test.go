package config

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite REFERENCE.md and the golden files in testdata")

// exampleFile is the annotated example configuration whose values fill
// the reference's example column. It must set every key of the schema;
// TestFullExampleLoads (in full_example_test.go) checks that it loads.
const exampleFile = "../examples/full.yaml"

// TestReference regenerates REFERENCE.md from schema.go, doc.go, the
// built-in defaults and examples/full.yaml, and fails when the committed
// file differs, so the reference cannot drift from the code. It also fails
// when a key has no doc comment or no example. Refresh it with
// `go generate ./config`.
func TestReference(t *testing.T) {
	ref := generateReference(t)
	if len(ref.undocumented) > 0 {
		t.Errorf("keys without a doc comment in schema.go (add one): %s", strings.Join(ref.undocumented, ", "))
	}
	if len(ref.unexampled) > 0 {
		t.Errorf("keys without an example in %s (set each one there, with a comment): %s",
			exampleFile, strings.Join(ref.unexampled, ", "))
	}
	if *update {
		if err := os.WriteFile("REFERENCE.md", []byte(ref.text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), ref.text); diff != "" {
		t.Errorf("REFERENCE.md is stale; run `go generate ./config` (-committed +generated):\n%s", diff)
	}
}

// TestExamplesSetEveryKey keeps testdata/valid complete: together its
// files set every key of the reference (full.yaml most of them), so every
// key is known to decode.
func TestExamplesSetEveryKey(t *testing.T) {
	ref := generateReference(t)
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []*Config
	for _, f := range files {
		cfgs = append(cfgs, loadTestdata(t, filepath.Base(f)))
	}
	for _, r := range ref.rows {
		path := strings.ReplaceAll(r.key, "[]", "[0]")
		found := false
		for _, cfg := range cfgs {
			if r.feedSetting {
				found = found || cfg.lines.get()["defaults."+path] > 0
				for i := range cfg.Feeds {
					found = found || cfg.lines.get()[fmt.Sprintf("feeds[%d].%s", i, path)] > 0
				}
			} else {
				found = found || cfg.lines.get()[path] > 0
			}
		}
		if !found {
			t.Errorf("no file of testdata/valid sets %s", r.key)
		}
	}
}

type refRow struct {
	key, typ, def, example, doc string
	feedSetting                 bool
}

type reference struct {
	text         string
	rows         []refRow
	undocumented []string
	unexampled   []string
}

// schemaFile is schema.go's syntax: the struct types by name.
type schemaFile struct {
	types    map[string]*ast.TypeSpec
	docs     map[string]string
	examples examples
}

func generateReference(t *testing.T) reference {
	t.Helper()
	return generateReferenceWith(t, exampleFile)
}

// generateReferenceWith generates the reference with the examples of the
// file at examplePath.
func generateReferenceWith(t *testing.T, examplePath string) reference {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "schema.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	s := schemaFile{types: map[string]*ast.TypeSpec{}, docs: map[string]string{}, examples: loadExamples(t, examplePath)}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			s.types[ts.Name.Name] = ts
			s.docs[ts.Name.Name] = gd.Doc.Text()
		}
	}
	pkgDoc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}

	def := builtin("<version>")
	var ref reference
	var b strings.Builder
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("<!-- Generated from schema.go, doc.go, the built-in defaults and examples/full.yaml by `go generate ./config`. Do not edit. -->\n\n")
	var p comment.Parser
	pr := comment.Printer{HeadingLevel: 2, HeadingID: func(*comment.Heading) string { return "" }}
	b.Write(pr.Markdown(p.Parse(pkgDoc.Doc.Text())))

	root := s.types["Config"].Type.(*ast.StructType)
	for _, field := range root.Fields.List {
		key, _, skip := yamlKey(field)
		if skip {
			continue
		}
		name := field.Names[0].Name
		typeName := identName(field.Type)
		fmt.Fprintf(&b, "\n## `%s`\n\n", key)
		switch key {
		case "defaults":
			b.WriteString(rewriteDoc(s.fieldDoc(root.Fields.List, field), s.keysOf("Config")) +
				" It holds the [feed settings](#feed-settings).\n")
			continue
		case "feeds":
			typeName = identName(field.Type.(*ast.ArrayType).Elt)
			b.WriteString(rewriteDoc(s.docs[typeName], s.keysOf(typeName)) + "\n\n")
		default:
			b.WriteString(rewriteDoc(s.docs[typeName], s.keysOf(typeName)) + "\n\n")
		}
		sdef := reflect.ValueOf(def).FieldByName(name)
		if sdef.Kind() != reflect.Struct {
			sdef = reflect.Value{} // feeds: no defaults inside a list
		}
		var rows []refRow
		s.rows(&ref, &rows, typeName, keyPrefix(key, field.Type), sdef, false)
		writeTable(&b, rows)
	}
	b.WriteString("\n## Feed settings\n\n")
	b.WriteString(rewriteDoc(s.docs["FeedSettings"], s.keysOf("FeedSettings")) +
		" They are written under `defaults` and in each entry of `feeds`; the default column is the built-in default," +
		" and the example is the first place examples/full.yaml sets the key, under `defaults` or in a feed.\n\n")
	var rows []refRow
	s.rows(&ref, &rows, "FeedSettings", "", reflect.ValueOf(def.Defaults), true)
	writeTable(&b, rows)
	ref.text = b.String()
	return ref
}

func keyPrefix(key string, typ ast.Expr) string {
	if _, ok := typ.(*ast.ArrayType); ok {
		return key + "[]."
	}
	return key + "."
}

// rows appends a row per key of the struct typeName, under prefix, and
// recurses into sub-sections; def is the built-in value of the struct
// (invalid when it has none, as inside lists).
func (s schemaFile) rows(ref *reference, rows *[]refRow, typeName, prefix string, def reflect.Value, feedSetting bool) {
	st := s.types[typeName].Type.(*ast.StructType)
	keys := s.keysOf(typeName)
	for _, field := range st.Fields.List {
		key, inline, skip := yamlKey(field)
		if skip {
			continue
		}
		var fdef reflect.Value
		if def.IsValid() {
			fdef = def.FieldByName(goName(field))
		}
		embedded := identName(field.Type)
		if inline {
			if embedded == "FeedSettings" {
				*rows = append(*rows, refRow{key: prefix + "…", typ: "feed settings", def: "—", example: "—",
					doc: "Every [feed setting](#feed-settings); a feed's own value wins over `defaults`."})
				continue
			}
			s.rows(ref, rows, embedded, prefix, fdef, feedSetting)
			continue
		}
		typ, child := s.describe(field.Type)
		doc := rewriteDoc(s.fieldDoc(st.Fields.List, field), keys)
		if doc == "" {
			ref.undocumented = append(ref.undocumented, prefix+key)
		}
		row := refRow{key: prefix + key, typ: typ, def: formatDefault(fdef), doc: doc, feedSetting: feedSetting}
		if ex, ok := s.examples.of(row.key, feedSetting); ok {
			row.example = codeSpan(ex)
		} else {
			row.example = "—"
			ref.unexampled = append(ref.unexampled, row.key)
		}
		*rows = append(*rows, row)
		ref.rows = append(ref.rows, row)
		if child != "" {
			var cdef reflect.Value
			if fdef.IsValid() && fdef.Kind() == reflect.Struct {
				cdef = fdef
			}
			s.rows(ref, rows, child, keyPrefix(prefix+key, unstar(field.Type)), cdef, feedSetting)
		}
	}
}

// fieldDoc is the field's doc and line comments. A field without either
// takes the comment of an earlier field in the same struct that names it,
// as in "MinInterval and MaxInterval are the floor and ceiling".
func (s schemaFile) fieldDoc(list []*ast.Field, field *ast.Field) string {
	doc, line := strings.TrimSpace(field.Doc.Text()), strings.TrimSpace(field.Comment.Text())
	switch {
	case doc != "" && line != "":
		return doc + " (" + line + ")"
	case doc != "" || line != "" || len(field.Names) == 0:
		return doc + line
	}
	name := field.Names[0].Name
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == field {
			for j := i - 1; j >= 0; j-- {
				d := list[j].Doc.Text()
				if slices.Contains(goWord.FindAllString(d, -1), name) {
					return strings.TrimSpace(d)
				}
			}
			break
		}
	}
	return ""
}

// keysOf maps the Go names of typeName's fields (and the type's own name)
// to the keys the file uses, for rewriting comments.
func (s schemaFile) keysOf(typeName string) map[string]string {
	keys := map[string]string{}
	ts := s.types[typeName]
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return keys
	}
	for _, field := range st.Fields.List {
		if key, _, skip := yamlKey(field); !skip && key != "" {
			keys[goName(field)] = key
		}
	}
	return keys
}

// describe names a field's type as the file sees it, and returns the
// struct type to recurse into, if any.
func (s schemaFile) describe(e ast.Expr) (typ, child string) {
	switch e := e.(type) {
	case *ast.StarExpr:
		return s.describe(e.X)
	case *ast.ArrayType:
		elem, child := s.describe(e.Elt)
		return "list of " + elem + "s", child
	case *ast.MapType:
		k, _ := s.describe(e.Key)
		v, _ := s.describe(e.Value)
		return "mapping of " + k + " to " + v, ""
	case *ast.Ident:
		switch e.Name {
		case "string":
			return "string", ""
		case "bool":
			return "boolean", ""
		case "int", "int64":
			return "integer", ""
		case "float64":
			return "number", ""
		case "Duration":
			return "duration", ""
		case "ByteSize":
			return "size", ""
		}
		if _, ok := s.types[e.Name].Type.(*ast.StructType); ok {
			return "mapping", e.Name
		}
	}
	panic(fmt.Sprintf("reference: no description for type %T %v", e, e))
}

func unstar(e ast.Expr) ast.Expr {
	if st, ok := e.(*ast.StarExpr); ok {
		return st.X
	}
	return e
}

func identName(e ast.Expr) string {
	if id, ok := unstar(e).(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func goName(field *ast.Field) string {
	if len(field.Names) > 0 {
		return field.Names[0].Name
	}
	return identName(field.Type)
}

// yamlKey reads a field's yaml tag the way yamlFields does.
func yamlKey(field *ast.Field) (key string, inline, skip bool) {
	name := goName(field)
	if !ast.IsExported(name) {
		return "", false, true
	}
	var tag string
	if field.Tag != nil {
		raw, _ := strconv.Unquote(field.Tag.Value)
		tag = reflect.StructTag(raw).Get("yaml")
	}
	key, opts, _ := strings.Cut(tag, ",")
	if key == "-" {
		return "", false, true
	}
	if opts == "inline" {
		return "", true, false
	}
	if key == "" {
		key = strings.ToLower(name)
	}
	return key, false, false
}

// rewriteDoc turns a Go comment into a description for the file's
// readers: one line, with Go field names replaced by their keys.
func rewriteDoc(doc string, keys map[string]string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	var b strings.Builder
	last := 0
	for _, m := range goWord.FindAllStringIndex(doc, -1) {
		w := doc[m[0]:m[1]]
		key, ok := keys[w]
		// An all-capitals name (URL, ID) is also an ordinary word; it is
		// the field only when it opens the comment.
		if !ok || m[0] > 0 && strings.ToUpper(w) == w {
			continue
		}
		b.WriteString(doc[last:m[0]] + "`" + key + "`")
		last = m[1]
	}
	b.WriteString(doc[last:])
	return strings.ReplaceAll(b.String(), "|", `\|`)
}

// goWord matches the words of a comment that may be Go field names.
var goWord = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

func writeTable(b *strings.Builder, rows []refRow) {
	b.WriteString("| key | type | default | example | description |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", r.key, r.typ, r.def, r.example, r.doc)
	}
}

// formatDefault writes a built-in default as it would appear in the file;
// "—" means no default (the key is unset, or must be given).
func formatDefault(v reflect.Value) string {
	if !v.IsValid() {
		return "—"
	}
	switch x := v.Interface().(type) {
	case Duration:
		if x == 0 {
			return "—"
		}
		return "`" + x.String() + "`"
	case ByteSize:
		return "`" + x.String() + "`"
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "—"
		}
		return formatDefault(v.Elem())
	case reflect.String:
		if v.String() == "" {
			return "—"
		}
		return "`" + strconv.Quote(v.String()) + "`"
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		return fmt.Sprintf("`%v`", v.Interface())
	default:
		return "—"
	}
}

// examples holds the values examples/full.yaml sets, by key path as the
// reference writes it: list indexes become [] ("feeds[].type_rules[].when")
// and each path keeps its first value in the file.
type examples struct {
	lines []string
	nodes map[string]*yaml.Node
}

func loadExamples(t *testing.T, path string) examples {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ex := examples{lines: strings.Split(string(data), "\n"), nodes: map[string]*yaml.Node{}}
	if len(doc.Content) > 0 {
		ex.walk(doc.Content[0], "", 0)
	}
	return ex
}

// walk records the value of every key below n, which is at path.
func (e examples) walk(n *yaml.Node, path string, depth int) {
	if depth > 50 {
		return // an alias cycle; loading the file reports it
	}
	switch n.Kind {
	case yaml.AliasNode:
		e.walk(n.Alias, path, depth+1)
	case yaml.SequenceNode:
		for _, item := range n.Content {
			e.walk(item, path+"[]", depth+1)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // merge key: its keys are this mapping's
				e.walk(v, path, depth+1)
				continue
			}
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if _, seen := e.nodes[p]; !seen && !isNull(v) {
				e.nodes[p] = v
			}
			e.walk(v, p, depth+1)
		}
	}
}

// exampleLimit is the length beyond which a list or mapping is cut short;
// its keys have rows of their own.
const exampleLimit = 48

// of returns the example of the reference row key: the value's text as
// written. A feed setting's is its first value under defaults or in a feed.
func (e examples) of(key string, feedSetting bool) (string, bool) {
	n := e.nodes[key]
	if feedSetting {
		n = e.nodes["defaults."+key]
		if f := e.nodes["feeds[]."+key]; f != nil && (n == nil || f.Line < n.Line) {
			n = f
		}
	}
	if n == nil {
		return "", false
	}
	return e.flow(n, exampleLimit, false), true
}

// flow writes n in YAML's flow style, its scalars as the file wrote them.
// A list or mapping longer than limit keeps its first entry (itself cut
// short) and as many more as fit whole, then "…". Inside one, a scalar
// longer than limit is "…"; at the top, a scalar is always whole.
func (e examples) flow(n *yaml.Node, limit int, nested bool) string {
	if n.Kind != yaml.SequenceNode && n.Kind != yaml.MappingNode {
		s := e.scalar(n)
		if nested && width(s) > limit {
			return "…"
		}
		return s
	}
	if s := e.flowAll(n); width(s) <= limit {
		return s
	}
	open, closing, step := "[", "]", 1
	if n.Kind == yaml.MappingNode {
		open, closing, step = "{", "}", 2
	}
	var parts []string
	used := 2 // the brackets
	for i := 0; i+step-1 < len(n.Content); i += step {
		room := limit - used - len(", …")
		var part string
		if step == 2 {
			k := e.scalar(n.Content[i])
			if i == 0 {
				part = k + ": " + e.flow(n.Content[i+1], room-width(k)-2, true)
			} else {
				part = k + ": " + e.flowAll(n.Content[i+1])
			}
		} else if i == 0 {
			part = e.flow(n.Content[i], room, true)
		} else {
			part = e.flowAll(n.Content[i])
		}
		if i > 0 && width(part)+2 > room {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, part)
		used += width(part) + 2
	}
	return open + strings.Join(parts, ", ") + closing
}

// flowAll writes n whole in YAML's flow style.
func (e examples) flowAll(n *yaml.Node) string {
	var parts []string
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			parts = append(parts, e.flowAll(c))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, e.scalar(n.Content[i])+": "+e.flowAll(n.Content[i+1]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return e.scalar(n)
}

func width(s string) int { return utf8.RuneCountInString(s) }

// scalar returns a scalar's source text: plain and single-quoted values are
// rebuilt exactly, double-quoted ones are read back from the file (their
// escapes are not kept in the node), and a value spanning lines is quoted
// onto one.
func (e examples) scalar(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode {
		return "*" + n.Value
	}
	var s string
	switch {
	case strings.Contains(n.Value, "\n"):
		s = strconv.Quote(n.Value)
	case n.Style&yaml.DoubleQuotedStyle != 0:
		s = e.doubleQuoted(n)
	case n.Style&yaml.SingleQuotedStyle != 0:
		s = "'" + strings.ReplaceAll(n.Value, "'", "''") + "'"
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		s = strconv.Quote(n.Value)
	default:
		s = n.Value
	}
	if n.Style&yaml.TaggedStyle != 0 {
		s = n.Tag + " " + s
	}
	return s
}

func (e examples) doubleQuoted(n *yaml.Node) string {
	if n.Line >= 1 && n.Line <= len(e.lines) {
		line := []rune(e.lines[n.Line-1])
		if start := n.Column - 1; start >= 0 && start < len(line) && line[start] == '"' {
			for i := start + 1; i < len(line); i++ {
				switch line[i] {
				case '\\':
					i++
				case '"':
					return string(line[start : i+1])
				}
			}
		}
	}
	return strconv.Quote(n.Value)
}

// codeSpan writes s as inline code in a table cell.
func codeSpan(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}
