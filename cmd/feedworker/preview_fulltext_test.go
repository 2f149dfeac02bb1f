package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/feedworker/feedworker/internal/testsite"
)

// TestPreviewFullText: preview shows the body publishing would send, the
// article extracted from the item's page, with the feed's one-line text
// as the summary.
func TestPreviewFullText(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	t.Cleanup(site.Close)
	cfg := writeFile(t, t.TempDir(), "feeds.yaml", fmt.Sprintf(`api: {base_url: embedded}
http:
  allow_networks: [127.0.0.0/8]
feeds:
  - id: site
    url: %s/feed.xml
    full_text: auto
`, site.URL))
	code, out, errOut := runCLI(t, "preview", "--config", cfg)
	if code != 0 {
		t.Fatalf("preview: exit %d: %s", code, errOut)
	}
	var got []struct {
		Items []struct {
			Request struct {
				Summary string `json:"summary"`
				Body    string `json:"body"`
			} `json:"request"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("preview output is not JSON: %v\n%.500s", err, out)
	}
	if len(got) != 1 || len(got[0].Items) != testsite.Stories {
		t.Fatalf("preview: want 1 feed with %d items:\n%.500s", testsite.Stories, out)
	}
	for i, it := range got[0].Items {
		n := i + 1
		if !strings.Contains(it.Request.Body, testsite.Paragraph(n, testsite.Paragraphs-1)) {
			t.Errorf("story %d: preview body lacks the article's last paragraph:\n%.400s", n, it.Request.Body)
		}
		for _, m := range testsite.Boilerplate {
			if strings.Contains(it.Request.Body, m) {
				t.Errorf("story %d: preview body holds %s", n, m)
			}
		}
		if !strings.HasPrefix(it.Request.Summary, fmt.Sprintf("Summary %d:", n)) {
			t.Errorf("story %d: summary %q is not the feed's", n, it.Request.Summary)
		}
	}
}
