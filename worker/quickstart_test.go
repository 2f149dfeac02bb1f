package worker

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartOnce runs the README's quickstart config for one pass and
// checks what the embedded sandbox then holds: each bundled feed mapped to
// its type, with titles, links and dates a newsletter can use.
func TestQuickstartOnce(t *testing.T) {
	cfg, err := LoadConfig("../examples/quickstart.yaml", "test")
	if err != nil {
		t.Fatalf("the quickstart config does not load: %v", err)
	}
	dir := t.TempDir()
	cfg.Store.Path = filepath.Join(dir, "quickstart.db")
	cfg.API.SandboxData = filepath.Join(dir, "sandbox.json")
	cfg.Admin.Listen = ""
	w := newWorker(t, cfg, Options{})
	s, err := w.Once(t.Context())
	if err != nil {
		t.Fatalf("once: %v", err)
	}
	want := map[string]int{"story": 5, "link": 10, "event": 4}
	counts := w.Sandbox().Counts()
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("sandbox holds %d %ss, want %d (all counts %v; summary %+v)", counts[typ], typ, n, counts, s)
		}
	}
	if s.Failed != 0 || s.ItemErrors != 0 {
		t.Errorf("summary reports failures: %+v", s)
	}
	for _, it := range w.Sandbox().AllContent() {
		body := string(it.JSON)
		switch it.Type {
		case "event":
			if !strings.Contains(body, `"event_start_date_time_utc":"2006-`) {
				t.Errorf("event %q has no start date from its title: %s", it.Title, body)
			}
		case "link":
			if !strings.Contains(body, `"external_url":"http`) {
				t.Errorf("link %q has no external_url: %s", it.Title, body)
			}
		}
		if strings.TrimSpace(it.Title) == "" || !strings.Contains(body, `"categories":[{`) {
			t.Errorf("item %d lacks a title or categories: %s", it.ID, body)
		}
	}
	// A second pass publishes nothing new.
	before := len(w.Sandbox().AllContent())
	if _, err := w.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after := len(w.Sandbox().AllContent()); after != before {
		t.Errorf("second pass changed the item count from %d to %d", before, after)
	}
}
