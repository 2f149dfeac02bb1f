package feeds

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestParseKeepsNoBody: nothing parsed from a document shares its memory,
// so the Fetcher may read the next document into it (bodyBuffer). A
// document parsed, then overwritten, gives what an untouched copy gives.
func TestParseKeepsNoBody(t *testing.T) {
	t.Parallel()
	var paths []string
	// Calendars too: the transform package's, which its tests map.
	for _, glob := range []string{"testdata/*.xml", "testdata/*.json", "../transform/testdata/ical/*.ics"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if corpus, err := filepath.Glob(filepath.Join(corpusDir(t), "feeds", "*")); err == nil && len(corpus) > 0 {
		paths = append(paths, corpus...)
	} else {
		t.Logf("corpus not found (set FEEDWORKER_CORPUS): only the %d documents of testdata", len(paths))
	}
	parsed := 0
	for _, p := range paths {
		doc, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, wantCal, wantInfo, wantErr := parseAny(bytes.Clone(doc), "", 16<<20)
		got, gotCal, gotInfo, gotErr := parseAny(doc, "", 16<<20)
		for i := range doc {
			doc[i] = "<x&;]>\x00é"[i%8]
		}
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Errorf("%s: errors differ: %v, %v", p, wantErr, gotErr)
		}
		if !reflect.DeepEqual(want, got) || !reflect.DeepEqual(wantCal, gotCal) || !reflect.DeepEqual(wantInfo, gotInfo) {
			t.Errorf("%s: what was parsed changed with the document's memory", p)
		}
		if want != nil && !reflect.DeepEqual(want.OriginalFeed(), got.OriginalFeed()) {
			t.Errorf("%s: the original feed changed with the document's memory", p)
		}
		if wantErr == nil {
			parsed++
		}
	}
	if parsed < len(paths)/2 {
		t.Fatalf("only %d of %d documents parsed", parsed, len(paths))
	}
}
