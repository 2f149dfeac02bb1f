package config

import (
	"strings"
	"testing"
)

// TestAppendFeedsKeepsTheFile: the entries land at the end of the feeds
// list, indented like it, and every other line of the file is kept.
func TestAppendFeedsKeepsTheFile(t *testing.T) {
	t.Parallel()
	add := []NewFeed{{ID: "city-hall-press", URL: "https://www.example.gov/press/rss.xml", Categories: []string{"News"}},
		{ID: "campus-calendar", URL: "https://calendar.example.edu/events.ics", Type: "event"}}
	for _, tt := range []struct{ name, src, want string }{
		{"block list, then another key",
			"api:\n  base_url: embedded   # the sandbox\n\nfeeds:\n    # the city's news\n    - id: news\n      url: https://example.com/rss  # main\n\n    - id: blog\n      url: https://example.com/blog\n\n# Logs.\nlog:\n  level: info\n",
			"api:\n  base_url: embedded   # the sandbox\n\nfeeds:\n    # the city's news\n    - id: news\n      url: https://example.com/rss  # main\n\n    - id: blog\n      url: https://example.com/blog\n" +
				"\n    # Imported.\n    - id: city-hall-press\n      url: https://www.example.gov/press/rss.xml\n      categories: [News]\n    - id: campus-calendar\n      url: https://calendar.example.edu/events.ics\n      type: event\n" +
				"\n# Logs.\nlog:\n  level: info\n"},
		{"list at the end, no final newline",
			"feeds:\n- id: news\n  url: https://example.com/rss",
			"feeds:\n- id: news\n  url: https://example.com/rss\n\n# Imported.\n- id: city-hall-press\n  url: https://www.example.gov/press/rss.xml\n  categories: [News]\n- id: campus-calendar\n  url: https://calendar.example.edu/events.ics\n  type: event\n"},
		{"empty flow list",
			"api:\n  base_url: embedded\nfeeds: []  # none yet\nlog:\n  level: info\n",
			"api:\n  base_url: embedded\nfeeds: # none yet\n\n  # Imported.\n  - id: city-hall-press\n    url: https://www.example.gov/press/rss.xml\n    categories: [News]\n  - id: campus-calendar\n    url: https://calendar.example.edu/events.ics\n    type: event\nlog:\n  level: info\n"},
		{"no feeds key",
			"api:\n  base_url: embedded\n",
			"api:\n  base_url: embedded\nfeeds:\n\n  # Imported.\n  - id: city-hall-press\n    url: https://www.example.gov/press/rss.xml\n    categories: [News]\n  - id: campus-calendar\n    url: https://calendar.example.edu/events.ics\n    type: event\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := AppendFeeds([]byte(tt.src), add, "Imported.")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			feeds, err := FileFeeds(got)
			if err != nil || len(feeds) < 2 || feeds[len(feeds)-1].ID != "campus-calendar" {
				t.Errorf("FileFeeds of the result = %v, %v", feeds, err)
			}
		})
	}
}

func TestAppendFeedsRefusesOddFiles(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"feeds: some text\n", "- a\n- b\n", "feeds: [\n"} {
		if _, err := AppendFeeds([]byte(src), []NewFeed{{ID: "a", URL: "https://a.example/"}}, ""); err == nil {
			t.Errorf("AppendFeeds(%q) succeeded, want an error", src)
		}
	}
}

func TestFeedIDFrom(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"City Hall Press":         "city-hall-press",
		"Café Müller — Blog!":     "cafe-muller-blog",
		"  Local & Regional  ":    "local-regional",
		"東京":                      "",
		strings.Repeat("ab ", 40): strings.TrimSuffix(strings.Repeat("ab-", 21), "-"),
	} {
		got := FeedIDFrom(in)
		if got != want {
			t.Errorf("FeedIDFrom(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !feedID.MatchString(got) {
			t.Errorf("FeedIDFrom(%q) = %q is not a valid feed id", in, got)
		}
	}
	taken := map[string]bool{"news": true}
	if a, b := UniqueFeedID("news", taken), UniqueFeedID("news", taken); a != "news-2" || b != "news-3" {
		t.Errorf("UniqueFeedID = %q, %q; want news-2, news-3", a, b)
	}
}
