package transform

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/mmcdole/gofeed"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/feeds"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the corpus")

// goldenNow is the fixed clock of the golden run.
var goldenNow = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

const (
	// goldenMaxItems caps the items written per feed, and goldenMaxBody the
	// body text shown, to keep the golden files reviewable. The payload
	// hash in each golden covers the whole payload, so a change beyond the
	// caps still fails the test.
	goldenMaxItems = 20
	goldenMaxBody  = 1500
)

// corpusDir finds the feed corpus: $FEEDWORKER_CORPUS (relative paths are
// taken from the repository root, as CI sets it), else ../shared/corpus next
// to the repository. It returns the folder holding the documents.
func corpusDir(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..") // the test runs in transform/
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("FEEDWORKER_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "shared", "corpus")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "feeds")); err == nil && fi.IsDir() {
		dir = filepath.Join(dir, "feeds")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("feed corpus not found at %s (set FEEDWORKER_CORPUS)", dir)
	}
	return dir
}

// corpusFeeds yields each corpus file's name and parsed feed; files that
// do not parse are the golden test's concern and are left out.
func corpusFeeds(t testing.TB) iter.Seq2[string, *gofeed.Feed] {
	dir := corpusDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return func(yield func(string, *gofeed.Feed) bool) {
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			feed, err := feeds.Parse(data, "")
			if err != nil {
				continue
			}
			if !yield(e.Name(), feed) {
				return
			}
		}
	}
}

// goldenResult is one result as the golden files show it.
type goldenResult struct {
	Skip         string   `json:"skip,omitempty"`
	Err          string   `json:"error,omitempty"`
	NeedsOGImage bool     `json:"needs_og_image,omitempty"`
	Warning      string   `json:"warning,omitempty"`
	Payload      *Payload `json:"payload,omitempty"`
}

type goldenFile struct {
	Items   int            `json:"items"`
	Shown   int            `json:"shown"`
	Results []goldenResult `json:"results"`
}

type corpusStats struct {
	files, unparsable, items, mapped, withImage, withSummary, withBody, errs int
	skips                                                                    map[string]int
}

func TestGoldenCorpus(t *testing.T) {
	dir := corpusDir(t)
	m, err := Compile("corpus", config.Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	goldenDir := filepath.Join("testdata", "golden")
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st := corpusStats{skips: map[string]int{}}
	want := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		st.files++
		name := e.Name()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		// The worker's own parse (charsets, leading junk, wrapped feeds), so
		// the goldens are what the worker would publish.
		feed, err := feeds.Parse(data, "")
		if err != nil {
			st.unparsable++
			t.Logf("unparsable (skipped): %s: %v", name, err)
			continue
		}
		results := m.Map(feed, goldenNow)
		if len(results) != len(feed.Items) {
			t.Errorf("%s: got %d results for %d items", name, len(results), len(feed.Items))
		}
		g := goldenFile{Items: len(results), Results: []goldenResult{}}
		for i, r := range results {
			st.items++
			checkResult(t, name, i, r)
			switch {
			case r.Err != nil:
				st.errs++
			case r.Skip != "":
				st.skips[skipClass(r.Skip)]++
			default:
				st.mapped++
				if r.Payload.ImageURL != "" {
					st.withImage++
				}
				if r.Payload.Summary != "" {
					st.withSummary++
				}
				if r.Payload.Body != "" {
					st.withBody++
				}
			}
			if i < goldenMaxItems {
				g.Results = append(g.Results, goldenView(r))
			}
		}
		g.Shown = len(g.Results)
		// Unescaped HTML, so that bodies read as HTML in a review.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(g); err != nil {
			t.Fatal(err)
		}
		got := buf.Bytes()
		file := filepath.Join(goldenDir, name+".golden.json")
		want[filepath.Base(file)] = true
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		wantBytes, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (run go test ./transform -update)", name, err)
			continue
		}
		if !bytes.Equal(got, wantBytes) {
			t.Errorf("%s: mapping differs from %s (-want +got):\n%s", name, file, gocmp.Diff(string(wantBytes), string(got)))
		}
	}
	// Goldens of files no longer in the corpus.
	old, _ := filepath.Glob(filepath.Join(goldenDir, "*.golden.json"))
	for _, f := range old {
		if !want[filepath.Base(f)] {
			if *update {
				_ = os.Remove(f)
			} else {
				t.Errorf("%s has no corpus file (run go test ./transform -update)", f)
			}
		}
	}

	var reasons []string
	skipped := 0
	for k, v := range st.skips {
		reasons = append(reasons, fmt.Sprintf("%s: %d", k, v))
		skipped += v
	}
	slices.Sort(reasons)
	t.Logf("corpus %s: %d files, %d unparsable (skipped); %d items: %d mapped (%d with an image, %d with a summary, %d with a body), %d skipped, %d errors",
		dir, st.files, st.unparsable, st.items, st.mapped, st.withImage, st.withSummary, st.withBody, skipped, st.errs)
	if len(reasons) > 0 {
		t.Logf("skipped items by reason: %s", strings.Join(reasons, "; "))
	}
	if st.mapped == 0 {
		t.Error("no item of the corpus was mapped")
	}
}

// skipClass groups skip reasons for the summary: reasons read
// "class: detail".
func skipClass(s string) string {
	class, _, _ := strings.Cut(s, ":")
	return class
}

// checkResult asserts what must hold for any mapped item, whatever the feed.
func checkResult(t *testing.T, file string, i int, r Result) {
	t.Helper()
	set := 0
	for _, b := range []bool{r.Payload != nil, r.Skip != "", r.Err != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		t.Errorf("%s item %d: want exactly one of payload, skip, error; got %+v", file, i, r)
		return
	}
	p := r.Payload
	if p == nil {
		return
	}
	if p.Title == "" || !strings.HasPrefix(p.ExternalID, "fw1-") || len(p.ExternalID) != 24 {
		t.Errorf("%s item %d: bad title or id: %q %q", file, i, p.Title, p.ExternalID)
	}
	if p.Hash != p.computeHash() {
		t.Errorf("%s item %d: hash does not match the payload", file, i)
	}
	for _, u := range []string{p.ImageURL, p.ExternalURL} {
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			t.Errorf("%s item %d: URL %q is not absolute http(s)", file, i, u)
		}
	}
	assertInert(t, fmt.Sprintf("%s item %d", file, i), p.Body)
	if p.Summary != "" && sameText(p.Summary, p.Title) {
		t.Errorf("%s item %d: summary repeats the title %q", file, i, p.Title)
	}
}

func goldenView(r Result) goldenResult {
	g := goldenResult{Skip: r.Skip, NeedsOGImage: r.NeedsOGImage, Warning: r.Warning}
	if r.Err != nil {
		g.Err = r.Err.Error()
	}
	if r.Payload != nil {
		p := *r.Payload
		if len(p.Body) > goldenMaxBody {
			cut := goldenMaxBody
			for cut > 0 && !utf8Start(p.Body[cut]) {
				cut--
			}
			p.Body = p.Body[:cut] + fmt.Sprintf("…[%d more bytes]", len(p.Body)-cut)
		}
		g.Payload = &p
	}
	return g
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// sortedKeys is used by tests that print maps.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}
