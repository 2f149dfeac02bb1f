package sandbox

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestNotSearchable: a field named in Options.NotSearchable is refused in
// filters and shown as not searchable by its template; other fields and
// other types still filter.
func TestNotSearchable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{NotSearchable: []string{"content.external_id"}})
	f.create("/v3/story", map[string]any{"title": "Alpha", "external_id": "a", "publish_date_utc": "2025-01-02 00:00:00"})
	q := func(filter string) string { return "?filters_json=" + url.QueryEscape(filter) }
	if r := f.do(http.MethodGet, "/v3/content"+q(`{"external_id":{"in":"a"}}`), nil); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "not searchable") {
		t.Errorf("filter on content.external_id: %d %s; want 400 not searchable", r.status, r.body)
	}
	if r := f.do(http.MethodGet, "/v3/content"+q(`{"title":{"eq":"Alpha"}}`), nil); r.status != http.StatusOK {
		t.Errorf("filter on content.title: %d %s; want 200", r.status, r.body)
	}
	if r := f.do(http.MethodGet, "/v3/segment"+q(`{"external_id":{"eq":"a"}}`), nil); r.status != http.StatusOK {
		t.Errorf("filter on segment.external_id: %d %s; want 200 (only content's is refused)", r.status, r.body)
	}
	if r := f.do(http.MethodGet, "/v3/content/template", nil); !strings.Contains(string(r.body), `{"name":"external_id","type":"string","searchable":false`) {
		t.Errorf("content template: %s; want external_id not searchable", r.body)
	}
	for _, bad := range []string{"content.nope", "nope.title", "external_id"} {
		if _, err := New(Options{NotSearchable: []string{bad}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("New with NotSearchable %q: %v; want an error naming it", bad, err)
		}
	}
}
