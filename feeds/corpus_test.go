package feeds

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/feedworker/feedworker/config"
	"golang.org/x/net/html/charset"
)

// corpusMinParsed is how many corpus documents parse (260 of 262, four of
// them partial: truncated documents whose complete items are read; the 2
// failures are listed in the test's log: an empty document and an HTML
// page). The test fails if a change parses fewer.
const corpusMinParsed = 260

// corpusDir is $FEEDWORKER_CORPUS, else ../shared/corpus next to the repository.
func corpusDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("FEEDWORKER_CORPUS"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "corpus")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

type manifestRow struct {
	file, sourceRepo, sourcePath, license, kind, wellformed, encoding string
}

func readManifest(t *testing.T, dir string) map[string]manifestRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatalf("read manifest: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	header := strings.Split(lines[0], "\t")
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, want := range []string{"file", "source_repo", "source_path", "license_of_source_repo", "kind", "wellformed", "encoding"} {
		if _, ok := col[want]; !ok {
			t.Fatalf("manifest has no %q column; header %q", want, header)
		}
	}
	rows := make(map[string]manifestRow, len(lines)-1)
	for _, l := range lines[1:] {
		c := strings.Split(l, "\t")
		if len(c) != len(header) {
			t.Fatalf("manifest row has %d columns, want %d: %q", len(c), len(header), l)
		}
		rows[c[col["file"]]] = manifestRow{
			file: c[col["file"]], sourceRepo: c[col["source_repo"]], sourcePath: c[col["source_path"]],
			license: c[col["license_of_source_repo"]], kind: c[col["kind"]],
			wellformed: c[col["wellformed"]], encoding: c[col["encoding"]],
		}
	}
	return rows
}

// contentTypeFor is what a typical server would send for the document: the
// feed media type of its kind, without a charset (so legacy-charset files
// rely on their declaration or the fallback, the hard case).
func contentTypeFor(r manifestRow) string {
	switch r.kind {
	case "rss2", "rss09x":
		return "application/rss+xml"
	case "rss1-rdf":
		return "application/rdf+xml"
	case "atom10", "atom03":
		return "application/atom+xml"
	case "jsonfeed":
		return "application/feed+json"
	}
	if strings.HasSuffix(r.file, ".json") {
		return "application/json"
	}
	return "text/xml"
}

// feedTypeFor is gofeed's FeedType for a manifest kind.
func feedTypeFor(kind string) string {
	switch {
	case strings.HasPrefix(kind, "rss"):
		return "rss"
	case strings.HasPrefix(kind, "atom"):
		return "atom"
	case kind == "jsonfeed":
		return "json"
	}
	return ""
}

// TestCorpus serves every corpus document from an httptest server and
// fetches and parses it with the Fetcher.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	feedsDir := filepath.Join(dir, "feeds")
	if _, err := os.Stat(feedsDir); err != nil {
		t.Skipf("corpus folder %s not found (set FEEDWORKER_CORPUS): %v", feedsDir, err)
	}
	rows := readManifest(t, dir)
	entries, err := os.ReadDir(feedsDir)
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(r.URL.Path)
		b, err := os.ReadFile(filepath.Join(feedsDir, name))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentTypeFor(rows[name]))
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	f, err := NewFetcher(config.HTTP{Timeout: config.Duration(20 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		name     string
		feedType string
		items    int
		partial  string
		sniffed  string
		text     []string // every item's title, description and content
		err      error
	}
	names := make(chan string)
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for name := range names {
				res, err := f.Fetch(context.Background(), srv.URL+"/feeds/"+name, Validators{})
				o := outcome{name: name, err: err}
				if err == nil {
					o.feedType, o.items = res.Feed.FeedType, len(res.Feed.Items)
					o.partial, o.sniffed = res.Partial, res.Sniffed
					for _, it := range res.Feed.Items {
						o.text = append(o.text, it.Title, it.Description, it.Content)
					}
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	for _, e := range entries {
		if !e.IsDir() {
			names <- e.Name()
		}
	}
	close(names)
	wg.Wait()
	slices.SortFunc(outcomes, func(a, b outcome) int { return strings.Compare(a.name, b.name) })

	parsed, items, partial, sniffed := 0, 0, 0, 0
	byKind := map[string][2]int{} // kind → parsed, total
	var failures []string
	for _, o := range outcomes {
		row, ok := rows[o.name]
		if !ok {
			t.Errorf("%s is not in MANIFEST.tsv", o.name)
		}
		k := byKind[row.kind]
		k[1]++
		if o.err == nil {
			parsed++
			items += o.items
			k[0]++
			if o.partial != "" {
				partial++
				failures = append(failures, fmt.Sprintf("%s: partial, %d items: %s", o.name, o.items, o.partial))
			}
			if o.sniffed != "" {
				sniffed++
				failures = append(failures, fmt.Sprintf("%s: charset sniffed: %s", o.name, o.sniffed))
			}
			for _, s := range o.text {
				if bad := misdecoded(s); bad != "" {
					t.Errorf("%s: item text is mis-decoded (%s): %.120q", o.name, bad, s)
				}
			}
			if want := feedTypeFor(row.kind); want != "" && o.feedType != want {
				t.Errorf("%s: parsed as %q, manifest kind %s", o.name, o.feedType, row.kind)
			}
		} else {
			failures = append(failures, fmt.Sprintf("FAIL %s [kind %s, wellformed %s, %s]: %s: %v",
				o.name, row.kind, row.wellformed, row.encoding, Class(o.err), o.err))
			if row.wellformed == "yes" && row.kind != "unknown" {
				t.Errorf("%s is well-formed %s but failed: %v", o.name, row.kind, o.err)
			}
		}
		byKind[row.kind] = k
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "corpus %s: %d of %d documents fetched and parsed (%d items; %d partial; %d charset-sniffed); %d failed\n",
		dir, parsed, len(outcomes), items, partial, sniffed, len(outcomes)-parsed)
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&sb, "  %-9s %3d/%d\n", k, byKind[k][0], byKind[k][1])
	}
	for _, f := range failures {
		sb.WriteString("  " + f + "\n")
	}
	t.Log(sb.String())

	if parsed < corpusMinParsed {
		t.Errorf("parsed %d documents, want at least %d", parsed, corpusMinParsed)
	}
	if len(outcomes) != len(rows) {
		t.Errorf("fetched %d files, manifest lists %d", len(outcomes), len(rows))
	}
}

// mojibake are byte sequences that UTF-8 text shows after it was decoded
// as Latin-1 or windows-1252 (or a legacy charset after being taken for
// UTF-8): "Ã©" for é, "â€™" for ’, "Ð°" for а, "ï»¿" for a byte order mark.
var mojibake = []string{
	"Ã©", "Ã¨", "Ã¤", "Ã¶", "Ã¼", "Ã§", "Ã¡", "Ã³", "Ã±", "Ã£", "Ãª", "Ã¢", "Ã‰", "Ã ",
	"â€™", "â€œ", "â€\u009d", "â€“", "â€”", "â€¦", "Â ", "Â»", "Â«",
	"Ð°", "Ðµ", "Ð¾", "Ñ€", "Ñ\u0081", "Ñ‚", "ï»¿",
}

// misdecoded says what is wrong with s as decoded text: invalid UTF-8, a
// replacement character, a C1 control, or a typical mis-decoding sequence;
// "" when nothing is.
func misdecoded(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	if strings.ContainsRune(s, utf8.RuneError) {
		return "U+FFFD"
	}
	for _, r := range s {
		if r >= 0x80 && r < 0xA0 {
			return fmt.Sprintf("C1 control %U", r)
		}
	}
	for _, m := range mojibake {
		if strings.Contains(s, m) {
			return fmt.Sprintf("%q", m)
		}
	}
	return ""
}

// TestMisdecoded checks the corpus sweep's detector on text decoded the
// wrong way round.
func TestMisdecoded(t *testing.T) {
	t.Parallel()
	latin1 := charmapDecode(t, "windows-1252", []byte("Café “quoted” — naïve"))
	cyr := charmapDecode(t, "windows-1252", []byte("Как перевести"))
	tests := []struct {
		name, in string
		bad      bool
	}{
		{"clean latin", "Café “quoted” — naïve", false},
		{"clean cyrillic", "Как перевести", false},
		{"clean japanese", "ドリコムRSS", false},
		{"utf-8 read as windows-1252", latin1, true},
		{"cyrillic utf-8 read as windows-1252", cyr, true},
		{"replacement character", "caf\uFFFD", true},
		{"invalid utf-8", "caf\xe9", true},
		{"c1 control from iso-8859-1", "caf\u0093", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := misdecoded(tt.in) != ""; got != tt.bad {
				t.Errorf("misdecoded(%q) = %q, want bad=%v", tt.in, misdecoded(tt.in), tt.bad)
			}
		})
	}
}

func charmapDecode(t *testing.T, label string, b []byte) string {
	t.Helper()
	enc, _ := charset.Lookup(label)
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
