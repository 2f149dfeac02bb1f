package transform

import (
	"errors"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/config"
)

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	zero, neg := 0, -2
	m := config.Mapping{
		Type: "article",
		TypeRules: []config.TypeRule{
			{When: `has_category("Events")`, Type: "event"},
			{When: `titel contains "x"`, Type: "link"},
			{When: `title`, Type: "story"}, // not a bool
			{When: ``, Type: "blog"},
			{When: `guid != ""`, Type: "Need"},
		},
		Categories:  []string{"News", " "},
		CategoryMap: map[string]string{"Events": "Events", "events": "Happenings", "": "x"},
		CategoryRules: []config.CategoryRule{
			{When: `link matches "("`, Categories: []string{"Links"}},
			{When: `true`},
		},
		Include:    &config.Filter{Keywords: []string{""}, Patterns: []string{"a(b"}, Fields: []string{"title", "bdy"}},
		Exclude:    &config.Filter{Patterns: []string{"ok", "*"}},
		TitleMax:   &zero,
		SummaryMax: &neg,
		Event:      &config.EventFields{Start: "ev:", City: "g:city/", Country: "a b", RegistrationURL: "x:link@"},
		Need:       &config.NeedFields{ByDate: "g:by_date"},
	}
	_, err := Compile("feed-1", m)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Compile: got %v, want a *CompileError", err)
	}
	if ce.FeedID != "feed-1" {
		t.Errorf("FeedID: got %q", ce.FeedID)
	}
	got := map[string]string{}
	for _, f := range ce.Fields {
		got[f.Path] = f.Err.Error()
	}
	wantPaths := []string{
		"type",
		"type_rules[1].when",
		"type_rules[2].when",
		"type_rules[3].type",
		"type_rules[3].when",
		"categories[1]",
		"category_map",
		"category_map.events",
		"category_rules[0].when",
		"category_rules[1].categories",
		"include.keywords[0]",
		"include.patterns[0]",
		"include.fields[1]",
		"exclude.patterns[1]",
		"title_max",
		"summary_max",
		"event.start",
		"event.city",
		"event.country",
		"event.registration_url",
		"need",
	}
	if diff := gocmp.Diff(wantPaths, sortedKeys(got), sortStrings()); diff != "" {
		t.Errorf("error paths (-want +got):\n%s\nall: %v", diff, err)
	}
	for path, sub := range map[string]string{
		"type_rules[1].when":  "unknown name titel (column 1)",
		"type":                `unknown content type "article"`,
		"include.patterns[0]": "invalid regular expression",
		"include.fields[1]":   `unknown field "bdy"`,
		"title_max":           "must be positive, got 0",
		"need":                "need.quantity",
		"category_map.events": `maps to "Happenings" but "Events"`,
	} {
		if !strings.Contains(got[path], sub) {
			t.Errorf("%s: got %q, want it to contain %q", path, got[path], sub)
		}
	}
	// The message names the feed and every problem on one line.
	if msg := err.Error(); !strings.HasPrefix(msg, `mapping of feed "feed-1": 21 errors: `) || strings.Contains(msg, "\n") {
		t.Errorf("error text: %q", msg)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != ce.Fields[0].Path {
		t.Errorf("errors.As(*FieldError): got %v", fe)
	}
}

func TestCompileValid(t *testing.T) {
	t.Parallel()
	ten := 10
	cases := map[string]config.Mapping{
		"zero value": {},
		"everything": {
			Type:          "Event",
			TypeRules:     []config.TypeRule{{When: `has_category("x") && link contains "/a/" || ext("ev:type") == "talk" || "y" in categories`, Type: "need"}},
			Categories:    []string{"News"},
			CategoryIDs:   []int64{4},
			CategoryMap:   map[string]string{"A": "B", "a": "B"}, // same target: fine
			CategoryRules: []config.CategoryRule{{When: `title matches "(?i)webinar" and feed_title != ""`, Categories: []string{"Webinars"}}},
			Include:       &config.Filter{Keywords: []string{"go"}, Fields: []string{"Title", "categories", "link", "author", "summary", "body"}},
			Exclude:       &config.Filter{},
			TitleMax:      &ten,
			Event:         &config.EventFields{Start: "g:start_date", End: "c:range/c:end", Location: "georss:point", AllDay: "x:allday@value", TimeZone: "tz"},
			Need:          &config.NeedFields{Quantity: "c:qty", ByDate: "c:by"},
		},
	}
	for name, m := range cases {
		if _, err := Compile("f", m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Compile("", config.Mapping{}); err == nil {
		t.Error("empty feed id: want an error")
	}
	// now() would make the payload depend on the clock.
	if _, err := Compile("f", config.Mapping{TypeRules: []config.TypeRule{{When: `now().Year() > 2000`, Type: "link"}}}); err == nil {
		t.Error("now(): want a compile error")
	}
}

func sortStrings() gocmp.Option {
	return gocmp.Transformer("sort", func(in []string) []string {
		out := append([]string(nil), in...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if out[j] < out[i] {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	})
}
