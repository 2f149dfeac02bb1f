package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const importOPML = `<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0">
  <head><title>Subscriptions</title></head>
  <body>
    <outline text="News">
      <outline type="rss" text="City Hall Press" xmlUrl="https://www.example.gov/press/rss.xml"/>
      <outline type="rss" text="Main" xmlUrl="https://example.com/rss/"/>
    </outline>
    <outline text="Events">
      <outline type="rss" text="Campus Calendar" xmlUrl="https://calendar.example.edu/events.ics" category="/Culture/Lectures"/>
    </outline>
    <outline type="rss" text="City Hall Press" xmlUrl="https://www.example.gov/press/atom.xml"/>
  </body>
</opml>
`

const importConfig = `# Production feeds.
api:
  base_url: embedded   # the local sandbox

feeds:
  # The main site.
  - id: main
    url: https://example.com/rss
    categories: [News]

# Log as JSON for the collector.
log:
  format: json
`

func TestFeedsImportWrite(t *testing.T) {
	dir := t.TempDir()
	opmlPath := writeFile(t, dir, "subs.opml", importOPML)
	cfg := writeFile(t, dir, "feeds.yaml", importConfig)

	// Printed: nothing written, the duplicate noted with its line.
	code, out, errOut := runCLI(t, "feeds", "import", opmlPath, "--config", cfg, "--category-from-outline")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "subs.opml:7: https://example.com/rss/ skipped: the config's feed main already has this URL") {
		t.Errorf("stderr lacks the duplicate note:\n%s", errOut)
	}
	for _, want := range []string{"- id: city-hall-press\n  url: https://www.example.gov/press/rss.xml\n  categories: [News]\n",
		"- id: campus-calendar\n  url: https://calendar.example.edu/events.ics\n  categories: [Events, Lectures]\n",
		"- id: city-hall-press-2\n  url: https://www.example.gov/press/atom.xml\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("printed entries lack\n%s\ngot:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != importConfig {
		t.Fatalf("the config changed without --write")
	}

	// Written: the file keeps every line, the feeds are added, and the
	// result is a valid config.
	code, out, errOut = runCLI(t, "feeds", "import", opmlPath, "--config", cfg, "--type", "event", "--write")
	if code != 0 || !strings.Contains(out, "3 feeds added") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	head, tail, ok := strings.Cut(importConfig, "\n# Log as JSON")
	if !ok || !strings.HasPrefix(got, head) || !strings.HasSuffix(got, "\n# Log as JSON"+tail) {
		t.Errorf("the file's own lines were not kept:\n%s", got)
	}
	if !strings.Contains(got, "  - id: campus-calendar\n    url: https://calendar.example.edu/events.ics\n    type: event\n    categories: [Lectures]\n") {
		t.Errorf("merged file lacks the calendar feed:\n%s", got)
	}
	if code, out, _ := runCLI(t, "validate", "--config", cfg); code != 0 || !strings.Contains(out, "4 feeds") {
		t.Errorf("validate after import: exit %d: %s", code, out)
	}

	// Again: every feed is there already.
	code, _, errOut = runCLI(t, "feeds", "import", opmlPath, "--config", cfg, "--write")
	if code != 0 || !strings.Contains(errOut, "nothing to import") {
		t.Errorf("second import: exit %d: %s", code, errOut)
	}

	// Export lists the four feeds as OPML 2.0, and reads back in.
	code, out, errOut = runCLI(t, "feeds", "export", "--config", cfg)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	for _, want := range []string{`<opml version="2.0">`, `text="main"`, `xmlUrl="https://calendar.example.edu/events.ics"`, `category="News"`} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %s:\n%s", want, out)
		}
	}
	exported := writeFile(t, dir, "exported.opml", out)
	if code, _, errOut := runCLI(t, "feeds", "import", exported, "--config", cfg); code != 0 || strings.Count(errOut, "skipped") != 4 {
		t.Errorf("re-importing the export: exit %d, want every feed skipped as configured:\n%s", code, errOut)
	}
}

func TestFeedsImportBadOPML(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, src, want string }{
		{"not xml", "hello\n", "bad.opml: line 1: not XML"},
		{"no outlines", "<opml version=\"2.0\">\n<body>\n</body>\n</opml>\n", "bad.opml: line 5: no outline"},
		{"no xmlUrl", "<opml version=\"2.0\">\n<body>\n<outline text=\"Orphan\"/>\n</body>\n</opml>\n", `bad.opml: line 3: outline "Orphan" has no xmlUrl`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, "bad.opml", tt.src)
			code, _, errOut := runCLI(t, "feeds", "import", p)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tt.want)
			}
		})
	}
	if code, _, errOut := runCLI(t, "feeds", "import", filepath.Join(dir, "bad.opml"), "--type", "blog"); code != 1 || !strings.Contains(errOut, `--type "blog"`) {
		t.Errorf("bad --type: exit %d %s", code, errOut)
	}
}
