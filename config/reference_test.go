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

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite REFERENCE.md and the golden files in testdata")

// TestReference regenerates REFERENCE.md from schema.go, doc.go and the
// built-in defaults, and fails when the committed file differs, so the
// reference cannot drift from the code. Refresh it with `go generate ./config`.
func TestReference(t *testing.T) {
	ref := generateReference(t)
	if len(ref.undocumented) > 0 {
		t.Errorf("keys without a doc comment in schema.go (add one): %s", strings.Join(ref.undocumented, ", "))
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
				found = found || cfg.lines["defaults."+path] > 0
				for i := range cfg.Feeds {
					found = found || cfg.lines[fmt.Sprintf("feeds[%d].%s", i, path)] > 0
				}
			} else {
				found = found || cfg.lines[path] > 0
			}
		}
		if !found {
			t.Errorf("no file of testdata/valid sets %s", r.key)
		}
	}
}

type refRow struct {
	key, typ, def, doc string
	feedSetting        bool
}

type reference struct {
	text         string
	rows         []refRow
	undocumented []string
}

// schemaFile is schema.go's syntax: the struct types by name.
type schemaFile struct {
	types map[string]*ast.TypeSpec
	docs  map[string]string
}

func generateReference(t *testing.T) reference {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "schema.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	s := schemaFile{types: map[string]*ast.TypeSpec{}, docs: map[string]string{}}
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
	b.WriteString("<!-- Generated from schema.go, doc.go and the built-in defaults by `go generate ./config`. Do not edit. -->\n\n")
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
		" They are written under `defaults` and in each entry of `feeds`; the default column is the built-in default.\n\n")
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
				*rows = append(*rows, refRow{key: prefix + "…", typ: "feed settings", def: "—",
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
	b.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.key, r.typ, r.def, r.doc)
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
