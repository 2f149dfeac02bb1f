package sandbox

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for i := 1; i <= 7; i++ {
		f.create("/v3/category", map[string]any{"description": fmt.Sprintf("c%d", i)})
	}
	tests := []struct {
		query      string
		want       []int64
		page, size int
	}{
		{"", []int64{1, 2, 3, 4, 5, 6, 7}, 1, 100},
		{"?page_size=3", []int64{1, 2, 3}, 1, 3},
		{"?page_size=3&page=2", []int64{4, 5, 6}, 2, 3},
		{"?page=3&page_size=3", []int64{7}, 3, 3},
		{"?page=4&page_size=3", []int64{}, 4, 3},
		{"?page=9223372036854775807&page_size=500", []int64{}, 9223372036854775807, 500},
		{"?page_size=500", []int64{1, 2, 3, 4, 5, 6, 7}, 1, 500},
		{"?page=1", []int64{1, 2, 3, 4, 5, 6, 7}, 1, 100},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			l := f.must(200, "GET", "/v3/category"+tt.query, nil).list(t)
			if got := ids(t, l.Data); !slices.Equal(got, tt.want) {
				t.Errorf("ids %v, want %v", got, tt.want)
			}
			if l.Page != tt.page || l.PageSize != tt.size || l.Total != 7 {
				t.Errorf("page %d page_size %d total %d, want %d %d 7", l.Page, l.PageSize, l.Total, tt.page, tt.size)
			}
		})
	}
	bad := []struct{ query, field string }{
		{"?page_size=501", "page_size"},
		{"?page_size=0", "page_size"},
		{"?page_size=-5", "page_size"},
		{"?page_size=abc", "page_size"},
		{"?page_size=1.5", "page_size"},
		{"?page_size=+5", "page_size"},
		{"?page_size=", "page_size"},
		{"?page=0", "page"},
		{"?page=-1", "page"},
		{"?page=x", "page"},
		{"?page=99999999999999999999", "page"},
		{"?page=1&page=2", "page"},
		{"?limit=10", "limit"},
		{"?filters_json=", "filters_json"},
		{"?page=%zz", ""},
	}
	for _, tt := range bad {
		t.Run(tt.query, func(t *testing.T) {
			res := f.must(400, "GET", "/v3/category"+tt.query, nil)
			if e := res.apiErr(t); e.Error.Field != tt.field {
				t.Errorf("field %q, want %q", e.Error.Field, tt.field)
			}
		})
	}
	// The default page is the first 100 entries (spec 8).
	for i := 8; i <= 101; i++ {
		f.create("/v3/category", map[string]any{"description": fmt.Sprintf("c%d", i)})
	}
	l := f.must(200, "GET", "/v3/category", nil).list(t)
	if len(l.Data) != 100 || l.Total != 101 {
		t.Errorf("default page: %d entries of %d, want 100 of 101", len(l.Data), l.Total)
	}
}

// TestFilters runs every operator on the searchable fields the issue names,
// and the refusals.
func TestFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	// More content: 5 link a, 6 story b, 7 event (no external_id).
	f.create("/v3/link", map[string]any{"title": "Alpha", "external_id": "a", "publish_date_utc": "2025-01-02 00:00:00"})
	f.create("/v3/story", map[string]any{"title": "Beta", "external_id": "b", "publish_date_utc": "2025-01-03 00:00:00"})
	f.create("/v3/event", map[string]any{"title": "Gamma"})
	f.clock.Advance(time.Minute)
	f.create("/v3/segment", map[string]any{"description": "Board", "external_id": "seg-2"})
	f.create("/v3/segment", map[string]any{"description": "Guests"})
	tests := []struct {
		path, filter string
		want         []int64
	}{
		{"/v3/content", `{"external_id":{"eq":"ext-1"}}`, []int64{1}},
		{"/v3/content", `{"external_id":{"neq":"ext-1"}}`, []int64{2, 3, 5, 6}}, // 4 and 7 have none
		{"/v3/content", `{"external_id":{"in":"a,b,zzz"}}`, []int64{5, 6}},
		{"/v3/content", `{"external_id":{"in":"a, b"}}`, []int64{5}}, // items are not trimmed
		{"/v3/content", `{"external_id":{"isnull":true}}`, []int64{4, 7}},
		{"/v3/content", `{"external_id":{"isnull":false}}`, []int64{1, 2, 3, 5, 6}},
		{"/v3/content", `{"external_id":{"lt":"ext-2"}}`, []int64{1, 5, 6}},
		{"/v3/content", `{"publish_date_utc":{"gt":"2025-01-02 00:00:00"}}`, []int64{4, 6}},
		{"/v3/content", `{"publish_date_utc":{"gte":"2025-01-02 00:00:00"}}`, []int64{4, 5, 6}},
		{"/v3/content", `{"publish_date_utc":{"lt":"2025-01-03 00:00:00"}}`, []int64{1, 5}},
		{"/v3/content", `{"publish_date_utc":{"lte":"2025-01-03 00:00:00"}}`, []int64{1, 5, 6}},
		{"/v3/content", `{"publish_date_utc":{"in":"2025-01-01 08:00:00,2025-01-04 08:00:00"}}`, []int64{1, 4}},
		{"/v3/content", `{"type":{"eq":"story"}}`, []int64{1, 6}},
		{"/v3/content", `{"type":{"in":"event,need"}}`, []int64{2, 4, 7}},
		{"/v3/content", `{"title":{"eq":"Beta"}}`, []int64{6}},
		{"/v3/content", `{"title":{"gte":"Link"}}`, []int64{1, 3, 4}}, // Story one, Link three, Need four
		{"/v3/content", `{"type":{"eq":"story"},"publish_date_utc":{"gt":"2025-01-01 08:00:00"}}`, []int64{6}},
		{"/v3/content", `{"id":{"gt":5}}`, []int64{6, 7}},
		{"/v3/content", `{"id":{"in":"1,7"}}`, []int64{1, 7}},
		{"/v3/content", `{"external_url":{"isnull":false}}`, []int64{3}},
		{"/v3/content", `{}`, []int64{1, 2, 3, 4, 5, 6, 7}},
		{"/v3/segment", `{"date_modified_utc":{"gt":"2025-03-01 12:00:00"}}`, []int64{2, 3}},
		{"/v3/segment", `{"date_modified_utc":{"lte":"2025-03-01 12:00:00"}}`, []int64{1}},
		{"/v3/segment", `{"external_id":{"isnull":true}}`, []int64{3}},
		{"/v3/segment", `{"external_id":{"eq":"seg-1"}}`, []int64{1}},
		{"/v3/segment", `{"description":{"neq":"Staff"}}`, []int64{2, 3}},
		{"/v3/subscriber", `{"email":{"eq":"bob@example.com"}}`, []int64{2}},
		{"/v3/subscriber", `{"email":{"in":"ann@example.com,cat@example.com"}}`, []int64{1}}, // Cat unsubscribed
		{"/v3/segment/1/subscriber", `{"email":{"eq":"ann@example.com"}}`, []int64{1}},
		{"/v3/category", `{"description":{"eq":"Sports"}}`, []int64{2}},
		{"/v3/unsubscribe", `{"termination_voluntary":{"eq":true}}`, []int64{3}},
		{"/v3/unsubscribe", `{"termination_voluntary":{"in":"false"}}`, []int64{}},
		{"/v3/blast", `{"name":{"eq":"Welcome"}}`, []int64{1}},
		{"/v3/subscriber/1/subscriber_interest", `{"description":{"eq":"News"}}`, []int64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.filter, func(t *testing.T) {
			l := f.must(200, "GET", filterPath(tt.path, tt.filter), nil).list(t)
			if got := ids(t, l.Data); !slices.Equal(got, tt.want) {
				t.Errorf("ids %v, want %v", got, tt.want)
			}
			if l.Total != len(tt.want) {
				t.Errorf("total %d, want %d", l.Total, len(tt.want))
			}
		})
	}
	insights := f.must(200, "GET", filterPath("/v3/content_insights", `{"content_id":{"eq":6}}`), nil).list(t)
	if len(insights.Data) != 1 || insights.Data[0]["content_id"] != 6.0 {
		t.Errorf("content insights filtered: %v", insights.Data)
	}
	// Filters and paging together: total counts the filtered entries.
	l := f.must(200, "GET", filterPath("/v3/content", `{"external_id":{"isnull":false}}`)+"&page_size=2&page=2", nil).list(t)
	if got := ids(t, l.Data); !slices.Equal(got, []int64{3, 5}) || l.Total != 5 {
		t.Errorf("page 2 of the filtered list: %v total %d", got, l.Total)
	}

	bad := []struct {
		path, filter, field string
	}{
		{"/v3/content", `{"body":{"eq":"x"}}`, "filters_json.body"},
		{"/v3/content", `{"summary":{"isnull":true}}`, "filters_json.summary"},
		{"/v3/content", `{"categories":{"eq":1}}`, "filters_json.categories"},
		{"/v3/content", `{"nope":{"eq":"x"}}`, "filters_json.nope"},
		{"/v3/segment", `{"id":{"eq":"1"}}`, "filters_json.id"},
		{"/v3/subscriber", `{"subscriber_status":{"eq":4}}`, "filters_json.subscriber_status"},
		{"/v3/category", `{"description":{"like":"N%"}}`, "filters_json.description"},
		{"/v3/category", `{"description":{"eq":"a","neq":"b"}}`, "filters_json.description"},
		{"/v3/category", `{"description":{}}`, "filters_json.description"},
		{"/v3/category", `{"description":"News"}`, "filters_json.description"},
		{"/v3/category", `{"description":{"eq":"a"},"description":{"eq":"b"}}`, "filters_json.description"},
		{"/v3/content", `{"external_id":{"in":["a","b"]}}`, "filters_json.external_id"},
		{"/v3/content", `{"external_id":{"isnull":"true"}}`, "filters_json.external_id"},
		{"/v3/content", `{"external_id":{"eq":5}}`, "filters_json.external_id"},
		{"/v3/content", `{"id":{"in":"1,x"}}`, "filters_json.id"},
		{"/v3/content", `{"id":{"eq":1.5}}`, "filters_json.id"},
		{"/v3/content", `{"publish_date_utc":{"gt":"2025-01-01"}}`, "filters_json.publish_date_utc"},
		{"/v3/content", `{"publish_date_utc":{"in":"2025-01-01 00:00:00,soon"}}`, "filters_json.publish_date_utc"},
		{"/v3/unsubscribe", `{"termination_voluntary":{"lt":true}}`, "filters_json.termination_voluntary"},
		{"/v3/unsubscribe", `{"termination_voluntary":{"in":"yes"}}`, "filters_json.termination_voluntary"},
		{"/v3/content", `[]`, "filters_json"},
		{"/v3/content", `{"title":`, "filters_json"},
		{"/v3/content", `{} {}`, "filters_json"},
		{"/v3/subscriber_status", `{"id":{"eq":1}}`, "filters_json.id"},
		{"/v3/segment/1/subscriber", `{"last_login":{"eq":"x"}}`, "filters_json.last_login"},
	}
	for _, tt := range bad {
		t.Run("refused "+tt.path+" "+tt.filter, func(t *testing.T) {
			res := f.must(400, "GET", filterPath(tt.path, tt.filter), nil)
			if e := res.apiErr(t); e.Error.Field != tt.field {
				t.Errorf("field %q, want %q (%s)", e.Error.Field, tt.field, e.Error.Message)
			}
		})
	}
}
