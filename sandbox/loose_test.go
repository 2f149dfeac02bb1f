package sandbox

import (
	"flag"
	"io"
	"net/http"
	"testing"
)

// TestLooseStyle: the loose style writes the same data as the strict one
// in the untidy shapes it promises, and nothing else changes.
func TestLooseStyle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Style: StyleLoose})
	story := map[string]any{"title": "T", "body": "<p>b</p>", "external_id": "x-1", "private": true,
		"publish_date_utc": "2025-03-01 12:00:00", "categories": []map[string]any{}}
	res := f.must(http.StatusCreated, http.MethodPost, "/v3/story", env(story))
	obj := res.obj(t)
	if id, ok := obj["id"].(string); !ok || id == "" {
		t.Errorf("id = %#v, want a numeric string", obj["id"])
	}
	if got := obj["publish_date_utc"]; got != "2025-03-01T14:00:00.000+02:00" {
		t.Errorf("publish_date_utc = %#v, want RFC 3339 in +02:00", got)
	}
	if got := obj["private"]; got != float64(1) {
		t.Errorf("private = %#v, want 1", got)
	}
	if v, has := obj["summary"]; !has || v != nil {
		t.Errorf("summary = %#v (present %v), want null", v, has)
	}
	if obj["legacy_key"] == nil || obj["_links"] == nil {
		t.Errorf("answer %s lacks the extra fields", res.body)
	}

	var list struct {
		Data  []map[string]any `json:"data"`
		Total string           `json:"total"`
		Meta  map[string]any   `json:"meta"`
	}
	f.must(http.StatusOK, http.MethodGet, "/v3/content", nil).decode(t, &list)
	if len(list.Data) != 1 || list.Total != "1" || list.Meta["style"] != "loose" {
		t.Errorf("list = %+v, want one item, total \"1\" and meta", list)
	}

	var tmpl struct {
		Data struct {
			Fields []map[string]any `json:"fields"`
		} `json:"data"`
	}
	f.must(http.StatusOK, http.MethodGet, "/v3/content/template", nil).decode(t, &tmpl)
	flags := map[string]map[string]any{}
	for _, fl := range tmpl.Data.Fields {
		flags[fl["name"].(string)] = fl
	}
	if got, ok := flags["external_id"]["searchable"].([]any); !ok || len(got) != 4 {
		t.Errorf("content external_id searchable = %#v, want the four content types", flags["external_id"]["searchable"])
	}
	f.must(http.StatusOK, http.MethodGet, "/v3/subscriber/template", nil).decode(t, &tmpl)
	for _, fl := range tmpl.Data.Fields {
		if fl["name"] == "email" {
			if got, ok := fl["required"].([]any); !ok || len(got) == 0 || got[0] != "create" {
				t.Errorf("subscriber email required = %#v, want [create ...]", fl["required"])
			}
		}
	}

	// Errors are the same in both styles.
	e := f.do(http.MethodGet, "/v3/content/999", nil)
	if e.status != http.StatusNotFound || e.apiErr(t).Error.Status != http.StatusNotFound {
		t.Errorf("error answer %d %s", e.status, e.body)
	}
}

func TestStyleOption(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{Style: "tidy"}); err == nil {
		t.Error("New accepted style tidy")
	}
	var o Options
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.RegisterFlags(fs)
	if o.Style != StyleStrict {
		t.Errorf("default style %q, want strict", o.Style)
	}
	if err := fs.Parse([]string{"--style", "loose"}); err != nil || o.Style != StyleLoose {
		t.Errorf("--style loose: %v, style %q", err, o.Style)
	}
	if err := fs.Parse([]string{"--style", "tidy"}); err == nil {
		t.Error("--style tidy accepted")
	}
}
