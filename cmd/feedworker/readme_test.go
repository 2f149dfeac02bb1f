package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// "`name`, `other` in [file](path)": the README's "where" cells.
	namedIn = regexp.MustCompile("((?:`[A-Za-z_][A-Za-z0-9_.]*`(?:, | and |/)?)+) in \\[[^\\]]+\\]\\(([^)#]+)\\)")
	ident   = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.]*)`")
)

// TestDocsLinksStayInTheRepository reads every Markdown file of the
// repository as a fresh clone has it: each relative link must lead to a
// file or folder inside the repository, and each identifier a "where" cell
// names must be in the file it links.
func TestDocsLinksStayInTheRepository(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 3 {
		t.Fatalf("found %d Markdown files under %s", len(docs), root)
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		text := string(b)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Join(filepath.Dir(doc), target)
			if r, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s links %s, outside the repository: a clone does not have it", rel, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s, which does not exist", rel, m[1])
			}
		}
		for _, m := range namedIn.FindAllStringSubmatch(text, -1) {
			src, err := os.ReadFile(filepath.Join(filepath.Dir(doc), m[2]))
			if err != nil {
				continue // a folder, or reported above
			}
			for _, id := range ident.FindAllStringSubmatch(m[1], -1) {
				name := id[1][strings.LastIndex(id[1], ".")+1:]
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).Match(src) {
					t.Errorf("%s says %s is in %s; it is not", rel, id[1], m[2])
				}
			}
		}
	}
}
