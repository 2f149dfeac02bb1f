package sandbox

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEndpoints calls every method and path of spec section 4 on a seeded
// sandbox. A check is given the answer and the fixture, to look at the
// state the call left.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	story := map[string]any{"title": "New story", "external_id": "n-1"}
	tests := []struct {
		name    string
		method  string
		path    string
		pattern string // the route, to prove every route is covered
		body    any
		want    int
		check   func(t *testing.T, res response, f *fixture)
	}{
		{"list subscribers", "GET", "/v3/subscriber", "subscriber", nil, 200, func(t *testing.T, res response, f *fixture) {
			if got := ids(t, res.list(t).Data); !slices.Equal(got, []int64{1, 2}) {
				t.Errorf("subscribers %v, want [1 2] (3 unsubscribed)", got)
			}
		}},
		{"create subscriber", "POST", "/v3/subscriber", "subscriber", env(subscriberBody("Dan", "dan@example.com")), 201, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			if o["id"] != 4.0 || o["email"] != "dan@example.com" || o["date_modified_utc"] != "2025-03-01 12:00:00" {
				t.Errorf("created %v", o)
			}
		}},
		{"get subscriber", "GET", "/v3/subscriber/1", "subscriber/{id}", nil, 200, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			want := []any{map[string]any{"id": 1.0, "self": "http://example.com/v3/segment/1"}}
			if o["first_name"] != "Ann" || !cmp.Equal(o["segments"], want) {
				t.Errorf("subscriber 1 is %v", o)
			}
		}},
		{"update subscriber", "PUT", "/v3/subscriber/1", "subscriber/{id}", env(map[string]any{
			"id": 1, "first_name": "Anna", "subscriber_status": map[string]any{"id": 3}, "subscriber_privacy_level": map[string]any{"id": 2},
		}), 200, func(t *testing.T, res response, f *fixture) {
			o := f.must(200, "GET", "/v3/subscriber/1", nil).obj(t)
			if o["first_name"] != "Anna" || o["last_name"] != "Tester" || !cmp.Equal(o["subscriber_status"], map[string]any{"id": 3.0}) {
				t.Errorf("after update %v", o)
			}
		}},
		{"unsubscribe", "POST", "/v3/subscriber/2/unsubscribe", "subscriber/{id}/unsubscribe", env(map[string]any{"departure_code": map[string]any{"id": 6}}), 200, func(t *testing.T, res response, f *fixture) {
			if o := res.obj(t); o["id"] != 2.0 || !cmp.Equal(o["subscriber_status"], map[string]any{"id": 1.0}) {
				t.Errorf("unsubscribe answered %v", o)
			}
			f.must(404, "GET", "/v3/subscriber/2", nil)
			f.must(200, "GET", "/v3/unsubscribe/2", nil)
		}},
		{"subscriber interest", "GET", "/v3/subscriber/1/subscriber_interest", "subscriber/{id}/subscriber_interest", nil, 200, func(t *testing.T, res response, f *fixture) {
			l := res.list(t)
			if len(l.Data) != 1 || l.Data[0]["id"] != 1.0 || l.Data[0]["description"] != "News" {
				t.Errorf("interest %v, want category 1 News", l.Data)
			}
		}},
		{"privacy levels", "GET", "/v3/subscriber_privacy_level", "subscriber_privacy_level", nil, 200, func(t *testing.T, res response, f *fixture) {
			if got := ids(t, res.list(t).Data); !slices.Equal(got, []int64{1, 2, 3}) {
				t.Errorf("ids %v", got)
			}
		}},
		{"subscriber statuses", "GET", "/v3/subscriber_status", "subscriber_status", nil, 200, func(t *testing.T, res response, f *fixture) {
			if got := ids(t, res.list(t).Data); !slices.Equal(got, []int64{1, 2, 3, 4}) {
				t.Errorf("ids %v", got)
			}
		}},
		{"departure codes", "GET", "/v3/subscriber_departure_code", "subscriber_departure_code", nil, 200, func(t *testing.T, res response, f *fixture) {
			l := res.list(t)
			if len(l.Data) != 12 || l.Data[5]["id"] != 6.0 || l.Data[5]["description"] != "retired" {
				t.Errorf("departure codes %v, want 12 with 6 retired", l.Data)
			}
			for _, d := range l.Data {
				if d["description"] == "" {
					t.Errorf("code %v has no description", d["id"])
				}
			}
		}},
		{"list unsubscribes", "GET", "/v3/unsubscribe", "unsubscribe", nil, 200, func(t *testing.T, res response, f *fixture) {
			l := res.list(t)
			if got := ids(t, l.Data); !slices.Equal(got, []int64{3}) || l.Data[0]["termination_voluntary"] != true {
				t.Errorf("unsubscribes %v", l.Data)
			}
		}},
		{"get unsubscribe", "GET", "/v3/unsubscribe/3", "unsubscribe/{id}", nil, 200, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			if o["email"] != "cat@example.com" || o["termination_date_utc"] != "2025-02-01 00:00:00" || !cmp.Equal(o["departure_code"], map[string]any{"id": 6.0}) {
				t.Errorf("unsubscribe 3 is %v", o)
			}
		}},
		{"list content", "GET", "/v3/content", "content", nil, 200, func(t *testing.T, res response, f *fixture) {
			var types []string
			for _, it := range res.list(t).Data {
				types = append(types, it["type"].(string))
			}
			if !slices.Equal(types, []string{"story", "event", "link", "need"}) {
				t.Errorf("types %v", types)
			}
		}},
		{"get content", "GET", "/v3/content/1", "content/{id}", nil, 200, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			want := map[string]any{
				"id": 1.0, "type": "story", "self": "http://example.com/v3/content/1", "title": "Story one",
				"external_id": "ext-1", "publish_date_utc": "2025-01-01 08:00:00", "date_modified_utc": "2025-03-01 12:00:00",
				"categories": []any{map[string]any{"id": 1.0, "self": "http://example.com/v3/category/1"}},
				"segments":   []any{map[string]any{"id": 1.0, "self": "http://example.com/v3/segment/1"}},
			}
			if d := cmp.Diff(want, o); d != "" {
				t.Errorf("content 1 (-want +got):\n%s", d)
			}
		}},
		{"create story", "POST", "/v3/story", "story", env(story), 201, nil},
		{"create event", "POST", "/v3/event", "event", env(map[string]any{"title": "E", "event_all_day": true}), 201, nil},
		{"create link", "POST", "/v3/link", "link", env(map[string]any{"title": "L", "external_url": "https://x.org"}), 201, nil},
		{"create need", "POST", "/v3/need", "need", env(map[string]any{"title": "N", "author": map[string]any{"id": 7}}), 201, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			if o["id"] != 5.0 || o["type"] != "need" || !cmp.Equal(o["author"], map[string]any{"id": 7.0, "self": "http://example.com/v3/author/7"}) {
				t.Errorf("created %v", o)
			}
		}},
		{"update story", "PUT", "/v3/story/1", "story/{id}", env(map[string]any{"id": 1, "title": "Renamed"}), 200, func(t *testing.T, res response, f *fixture) {
			if o := f.must(200, "GET", "/v3/content/1", nil).obj(t); o["title"] != "Renamed" || o["external_id"] != "ext-1" {
				t.Errorf("after update %v", o)
			}
		}},
		{"update event", "PUT", "/v3/event/2", "event/{id}", env(map[string]any{"id": 2, "event_city": "Nice"}), 200, nil},
		{"update link", "PUT", "/v3/link/3", "link/{id}", env(map[string]any{"id": 3, "evergreen": true}), 200, nil},
		{"update need", "PUT", "/v3/need/4", "need/{id}", env(map[string]any{"id": 4, "external_url": "https://x.org/n"}), 200, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			if o["external_url"] != "https://x.org/n" || o["publish_date_utc"] != "2025-01-04 08:00:00" || o["need_quantity"] != 3.0 {
				t.Errorf("need after update %v: create-only fields must be kept", o)
			}
		}},
		{"delete story", "DELETE", "/v3/story/1", "story/{id}", nil, 204, func(t *testing.T, res response, f *fixture) {
			f.must(404, "GET", "/v3/content/1", nil)
		}},
		{"delete event", "DELETE", "/v3/event/2", "event/{id}", nil, 204, nil},
		{"delete link", "DELETE", "/v3/link/3", "link/{id}", nil, 204, nil},
		{"delete need", "DELETE", "/v3/need/4", "need/{id}", nil, 204, func(t *testing.T, res response, f *fixture) {
			if len(res.body) != 0 {
				t.Errorf("204 with body %q", res.body)
			}
		}},
		{"list segments", "GET", "/v3/segment", "segment", nil, 200, func(t *testing.T, res response, f *fixture) {
			if l := res.list(t); l.Total != 1 || l.Data[0]["external_id"] != "seg-1" {
				t.Errorf("segments %v", l)
			}
		}},
		{"create segment", "POST", "/v3/segment", "segment", env(map[string]any{"description": "Board"}), 201, func(t *testing.T, res response, f *fixture) {
			if o := res.obj(t); o["id"] != 2.0 || o["description"] != "Board" || o["date_modified_utc"] == nil {
				t.Errorf("segment create answered %v, want its data with the new id", o)
			}
		}},
		{"get segment", "GET", "/v3/segment/1", "segment/{id}", nil, 200, nil},
		{"update segment", "PUT", "/v3/segment/1", "segment/{id}", env(map[string]any{"description": "All staff", "external_id": "seg-9"}), 200, func(t *testing.T, res response, f *fixture) {
			if o := res.obj(t); o["description"] != "All staff" || o["external_id"] != "seg-9" {
				t.Errorf("updated %v", o)
			}
		}},
		{"delete segment", "DELETE", "/v3/segment/1", "segment/{id}", nil, 204, func(t *testing.T, res response, f *fixture) {
			o := f.must(200, "GET", "/v3/subscriber/1", nil).obj(t)
			if !cmp.Equal(o["segments"], []any{}) {
				t.Errorf("subscriber 1 after its segment was deleted: %v", o)
			}
		}},
		{"add to segment", "POST", "/v3/segment/1/subscriber", "segment/{id}/subscriber", env(map[string]any{"id": 2}), 200, func(t *testing.T, res response, f *fixture) {
			if o := res.obj(t); o["id"] != 2.0 || len(o["segments"].([]any)) != 1 {
				t.Errorf("add answered %v, want subscriber 2 referencing segment 1", o)
			}
		}},
		{"segment members", "GET", "/v3/segment/1/subscriber", "segment/{id}/subscriber", nil, 200, func(t *testing.T, res response, f *fixture) {
			if got := ids(t, res.list(t).Data); !slices.Equal(got, []int64{1}) {
				t.Errorf("members %v", got)
			}
		}},
		{"remove from segment", "DELETE", "/v3/segment/1/subscriber/1", "segment/{id}/subscriber/{id}", nil, 204, func(t *testing.T, res response, f *fixture) {
			if l := f.must(200, "GET", "/v3/segment/1/subscriber", nil).list(t); l.Total != 0 {
				t.Errorf("members after removal %v", l.Data)
			}
			f.must(200, "GET", "/v3/subscriber/1", nil)
		}},
		{"list categories", "GET", "/v3/category", "category", nil, 200, func(t *testing.T, res response, f *fixture) {
			if got := ids(t, res.list(t).Data); !slices.Equal(got, []int64{1, 2}) {
				t.Errorf("categories %v", got)
			}
		}},
		{"create category", "POST", "/v3/category", "category", env(map[string]any{"description": "Culture"}), 201, nil},
		{"get category", "GET", "/v3/category/2", "category/{id}", nil, 200, func(t *testing.T, res response, f *fixture) {
			if o := res.obj(t); o["description"] != "Sports" {
				t.Errorf("category 2 %v", o)
			}
		}},
		{"delete category", "DELETE", "/v3/category/1", "category/{id}", nil, 204, func(t *testing.T, res response, f *fixture) {
			if o := f.must(200, "GET", "/v3/content/1", nil).obj(t); !cmp.Equal(o["categories"], []any{}) {
				t.Errorf("story still references the deleted category: %v", o["categories"])
			}
		}},
		{"list blasts", "GET", "/v3/blast", "blast", nil, 200, nil},
		{"create blast", "POST", "/v3/blast", "blast", env(map[string]any{
			"status": map[string]any{"id": 3}, "date_scheduled_utc": "2025-04-01 09:00:00",
			"target_segments": []any{map[string]any{"id": 1}}, "target_categories": []any{map[string]any{"id": 2}},
			"blast_merge_fields": []any{map[string]any{"id": 1, "type": map[string]any{"id": 2}, "value": "x"}},
		}), 201, func(t *testing.T, res response, f *fixture) {
			o := res.obj(t)
			if !cmp.Equal(o["target_segments"], []any{map[string]any{"id": 1.0}}) ||
				!cmp.Equal(o["blast_merge_fields"], []any{map[string]any{"id": 1.0, "type": map[string]any{"id": 2.0}, "value": "x"}}) {
				t.Errorf("blast %v", o)
			}
		}},
		{"get blast", "GET", "/v3/blast/1", "blast/{id}", nil, 200, nil},
		{"update blast", "PUT", "/v3/blast/1", "blast/{id}", env(map[string]any{"id": 1, "status": map[string]any{"id": 2}}), 200, func(t *testing.T, res response, f *fixture) {
			if o := res.obj(t); o["name"] != "Welcome" || !cmp.Equal(o["status"], map[string]any{"id": 2.0}) {
				t.Errorf("blast %v", o)
			}
		}},
		{"delete blast", "DELETE", "/v3/blast/1", "blast/{id}", nil, 204, nil},
		{"blast statuses", "GET", "/v3/blast_status", "blast_status", nil, 200, func(t *testing.T, res response, f *fixture) {
			if l := res.list(t); l.Total != 4 || l.Data[0]["description"] != "Draft" {
				t.Errorf("blast statuses %v", l.Data)
			}
		}},
		{"content insights", "GET", "/v3/content_insights", "content_insights", nil, 200, func(t *testing.T, res response, f *fixture) {
			l := res.list(t)
			if l.Total != 4 || l.Data[1]["content_id"] != 2.0 || l.Data[1]["type"] != "event" || l.Data[1]["views"] != 0.0 {
				t.Errorf("content insights %v", l.Data)
			}
		}},
		{"subscriber insights", "GET", "/v3/subscriber_insights", "subscriber_insights", nil, 200, func(t *testing.T, res response, f *fixture) {
			l := res.list(t)
			if l.Total != 2 || l.Data[0]["subscriber_id"] != 1.0 || l.Data[0]["email"] != "ann@example.com" || l.Data[0]["digests_opened"] != 0.0 {
				t.Errorf("subscriber insights %v", l.Data)
			}
		}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.method+" "+tt.pattern] = true
	}
	f := newFixture(t, Options{})
	var routed []string
	for _, rt := range f.srv.routes {
		p := strings.Join(rt.segs, "/")
		if strings.HasSuffix(p, "/template") {
			continue // TestTemplates
		}
		for m := range rt.methods {
			routed = append(routed, m+" "+p)
			if !covered[m+" "+p] {
				t.Errorf("route %s %s has no case", m, p)
			}
		}
	}
	if len(routed) != 45 {
		t.Errorf("%d method+path pairs routed, want the 45 of spec section 4", len(routed))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{})
			f.seed()
			res := f.do(tt.method, tt.path, tt.body)
			if res.status != tt.want {
				t.Fatalf("%s %s: status %d, want %d; body %s", tt.method, tt.path, res.status, tt.want, res.body)
			}
			if tt.want != 204 && res.header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", res.header.Get("Content-Type"))
			}
			if tt.check != nil {
				tt.check(t, res, f)
			}
		})
	}
}

// TestNotFoundAndMethods covers unknown paths, unknown ids and wrong methods.
func TestNotFoundAndMethods(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	tests := []struct {
		method, path string
		want         int
		allow        string
	}{
		{"GET", "/v3/story", 405, "POST"},
		{"GET", "/v3/story/1", 405, "DELETE, PUT"},
		{"GET", "/v3/need/4", 405, "DELETE, PUT"},
		{"PUT", "/v3/content/1", 405, "GET"},
		{"DELETE", "/v3/content/1", 405, "GET"},
		{"POST", "/v3/content", 405, "GET"},
		{"DELETE", "/v3/subscriber/1", 405, "GET, PUT"},
		{"PUT", "/v3/category/1", 405, "DELETE, GET"},
		{"GET", "/v3/segment/1/subscriber/1", 405, "DELETE"},
		{"GET", "/v3/subscriber/1/unsubscribe", 405, "POST"},
		{"POST", "/v3/blast_status", 405, "GET"},
		{"HEAD", "/v3/content", 405, "GET"},
		{"PUT", "/v3/story/template", 405, "GET"},
		{"GET", "/v3", 404, ""},
		{"GET", "/v3/", 404, ""},
		{"GET", "/v3/stories", 404, ""},
		{"GET", "/v3/content/", 404, ""},
		{"GET", "/v3/content/abc", 404, ""},
		{"GET", "/v3/content/-1", 404, ""},
		{"GET", "/v3/content/1/extra", 404, ""},
		{"GET", "/v3/content_insights/1", 404, ""},
		{"GET", "/v4/content", 404, ""},
		{"GET", "/", 404, ""},
		{"GET", "/v3/content/0", 404, ""},
		{"GET", "/v3/content/99", 404, ""},
		{"GET", "/v3/content/99999999999999999999", 404, ""},
		{"PUT", "/v3/event/1", 404, ""}, // 1 is a story
		{"DELETE", "/v3/link/1", 404, ""},
		{"DELETE", "/v3/story/99", 404, ""},
		{"GET", "/v3/subscriber/3", 404, ""}, // unsubscribed
		{"GET", "/v3/unsubscribe/1", 404, ""},
		{"POST", "/v3/subscriber/3/unsubscribe", 404, ""},
		{"GET", "/v3/subscriber/99/subscriber_interest", 404, ""},
		{"GET", "/v3/segment/9", 404, ""},
		{"DELETE", "/v3/segment/9", 404, ""},
		{"GET", "/v3/segment/9/subscriber", 404, ""},
		{"DELETE", "/v3/segment/1/subscriber/2", 404, ""}, // not a member
		{"DELETE", "/v3/segment/1/subscriber/99", 404, ""},
		{"DELETE", "/v3/segment/9/subscriber/1", 404, ""},
		{"GET", "/v3/category/9", 404, ""},
		{"DELETE", "/v3/category/9", 404, ""},
		{"GET", "/v3/blast/9", 404, ""},
		{"DELETE", "/v3/blast/9", 404, ""},
		{"GET", "/v3/blast/template/x", 404, ""},
		{"GET", "/v3/nothing/template", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := f.do(tt.method, tt.path, nil)
			if res.status != tt.want {
				t.Fatalf("status %d, want %d; body %s", res.status, tt.want, res.body)
			}
			if tt.method != "HEAD" {
				res.apiErr(t)
			}
			if got := res.header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
	// PUT and POST with a body on unknown ids are 404 too, whatever the body.
	for _, path := range []string{"/v3/story/99", "/v3/subscriber/99", "/v3/segment/99", "/v3/blast/99"} {
		if res := f.do("PUT", path, env(map[string]any{"id": 99, "nonsense": 1})); res.status != 404 {
			t.Errorf("PUT %s: status %d, want 404", path, res.status)
		}
	}
	if res := f.do("POST", "/v3/segment/99/subscriber", env(map[string]any{"id": 1})); res.status != 404 {
		t.Errorf("add to a missing segment: status %d, want 404", res.status)
	}
}

// TestTemplates checks every template endpoint of the wire conventions and
// the searchable fields the issue names.
func TestTemplates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	type tfield struct {
		Name       string `json:"name"`
		Type       string `json:"type"`
		Searchable bool   `json:"searchable"`
		Required   bool   `json:"required"`
		ReadOnly   bool   `json:"read_only"`
		CreateOnly bool   `json:"create_only"`
		UpdateOnly bool   `json:"update_only"`
	}
	tests := []struct {
		typ        string
		searchable []string
		has        []string
		lacks      []string
	}{
		{"subscriber", []string{"id", "first_name", "last_name", "email", "date_modified_utc"}, []string{"subscriber_status"}, nil},
		{"unsubscribe", []string{"id", "first_name", "last_name", "email", "termination_date_utc", "termination_voluntary", "date_modified_utc"}, []string{"departure_code"}, nil},
		{"segment", []string{"id", "description", "external_id", "date_modified_utc"}, nil, nil},
		{"category", []string{"id", "description", "date_modified_utc"}, nil, nil},
		{"content", []string{"id", "type", "title", "external_id", "publish_date_utc", "expiration_date_utc", "external_url", "date_modified_utc"}, []string{"event_city", "need_quantity", "self"}, nil},
		{"story", []string{"id", "type", "title", "external_id", "publish_date_utc", "expiration_date_utc", "date_modified_utc"}, []string{"evergreen"}, []string{"external_url", "event_city"}},
		{"event", []string{"id", "type", "title", "external_id", "external_url", "date_modified_utc"}, []string{"event_time_zone"}, []string{"publish_date_utc", "expiration_date_utc", "evergreen"}},
		{"link", []string{"id", "type", "title", "external_id", "publish_date_utc", "expiration_date_utc", "external_url", "date_modified_utc"}, []string{"evergreen"}, []string{"need_quantity"}},
		{"need", []string{"id", "type", "title", "external_id", "publish_date_utc", "external_url", "date_modified_utc"}, []string{"need_by_date_utc"}, []string{"expiration_date_utc", "evergreen"}},
		{"blast", []string{"id", "name", "date_scheduled_utc", "date_modified_utc"}, []string{"reply_to_email", "blast_merge_fields"}, nil},
		{"content_insights", []string{"content_id", "type"}, []string{"views"}, nil},
		{"subscriber_insights", []string{"subscriber_id", "email"}, []string{"blasts_opened"}, nil},
	}
	if len(tests) != len(templateTypes()) {
		t.Fatalf("%d cases for %d template types", len(tests), len(templateTypes()))
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			res := f.must(200, "GET", "/v3/"+tt.typ+"/template", nil)
			var body struct {
				Data struct {
					Type   string   `json:"type"`
					Fields []tfield `json:"fields"`
				} `json:"data"`
			}
			res.decode(t, &body)
			if body.Data.Type != tt.typ {
				t.Errorf("type %q", body.Data.Type)
			}
			byName := map[string]tfield{}
			var searchable []string
			for _, fl := range body.Data.Fields {
				byName[fl.Name] = fl
				if fl.Type == "" {
					t.Errorf("field %s has no type", fl.Name)
				}
				if fl.Searchable {
					searchable = append(searchable, fl.Name)
				}
			}
			if d := cmp.Diff(tt.searchable, searchable); d != "" {
				t.Errorf("searchable (-want +got):\n%s", d)
			}
			for _, n := range tt.has {
				if _, ok := byName[n]; !ok {
					t.Errorf("no field %s", n)
				}
			}
			for _, n := range tt.lacks {
				if _, ok := byName[n]; ok {
					t.Errorf("field %s listed; spec 2.7 gives %s none", n, tt.typ)
				}
			}
		})
	}
	// Spot checks of the flags.
	res := f.must(200, "GET", "/v3/need/template", nil)
	for _, want := range []string{
		`{"name":"title","type":"string","searchable":true,"required":true}`,
		`{"name":"publish_date_utc","type":"timestamp","searchable":true,"required":false,"create_only":true}`,
		`{"name":"external_url","type":"string","searchable":true,"required":false,"update_only":true}`,
		`{"name":"categories","type":"array of ref","searchable":false,"required":false}`,
		`{"name":"id","type":"integer","searchable":true,"required":false,"read_only":true}`,
	} {
		if !strings.Contains(string(res.body), want) {
			t.Errorf("need template lacks %s", want)
		}
	}
	res = f.must(200, "GET", "/v3/subscriber/template", nil)
	if !strings.Contains(string(res.body), `{"name":"subscriber_status","type":"object","searchable":false,"required":true}`) {
		t.Errorf("subscriber template: %s", res.body)
	}
	if res := f.do("GET", "/v3/story/template?x=1", nil); res.status != 400 {
		t.Errorf("template with a query: %d", res.status)
	}
}

// TestSemantics covers the behaviour the spec describes beyond one call.
func TestSemantics(t *testing.T) {
	t.Parallel()
	t.Run("unsubscribe moves the subscriber", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{})
		f.seed()
		f.must(200, "POST", "/v3/subscriber/1/unsubscribe", nil) // the envelope is optional
		if l := f.must(200, "GET", "/v3/subscriber", nil).list(t); !slices.Equal(ids(t, l.Data), []int64{2}) {
			t.Errorf("subscribers %v", ids(t, l.Data))
		}
		if l := f.must(200, "GET", "/v3/unsubscribe", nil).list(t); !slices.Equal(ids(t, l.Data), []int64{1, 3}) {
			t.Errorf("unsubscribes %v", ids(t, l.Data))
		}
		u := f.must(200, "GET", "/v3/unsubscribe/1", nil).obj(t)
		if u["first_name"] != "Ann" || u["segments"] != nil || u["termination_date_utc"] != nil {
			t.Errorf("unsubscribe 1 %v: keeps the person, drops segments, records no termination data it was not given", u)
		}
		if l := f.must(200, "GET", "/v3/segment/1/subscriber", nil).list(t); l.Total != 0 {
			t.Errorf("segment still lists the unsubscribed subscriber: %v", l.Data)
		}
		f.must(404, "PUT", "/v3/subscriber/1", env(map[string]any{"subscriber_status": map[string]any{"id": 4}, "subscriber_privacy_level": map[string]any{"id": 1}}))
		res := f.must(400, "POST", "/v3/segment/1/subscriber", env(map[string]any{"id": 1}))
		if e := res.apiErr(t); e.Error.Field != "id" || !strings.Contains(e.Error.Message, "unsubscribed") {
			t.Errorf("adding an unsubscribed subscriber: %+v", e)
		}
		// Ids are not reused: the next subscriber is 4.
		if id := f.create("/v3/subscriber", subscriberBody("Eve", "eve@example.com")); id != 4 {
			t.Errorf("next subscriber id %d, want 4", id)
		}
	})
	t.Run("segment keeps members apart and takes one per add", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{})
		f.seed()
		res := f.must(400, "POST", "/v3/segment/1/subscriber", env(map[string]any{"id": 1}, map[string]any{"id": 2}))
		if e := res.apiErr(t); e.Error.Field != "template.data" {
			t.Errorf("two subscribers in one add: field %q", e.Error.Field)
		}
		// Adding twice is harmless.
		f.must(200, "POST", "/v3/segment/1/subscriber", env(map[string]any{"id": 1}))
		f.create("/v3/segment", map[string]any{"description": "Board"})
		o := f.must(200, "POST", "/v3/segment/2/subscriber", env(map[string]any{"id": 1})).obj(t)
		if n := len(o["segments"].([]any)); n != 2 {
			t.Errorf("subscriber 1 in %d segments, want 2", n)
		}
		f.must(204, "DELETE", "/v3/segment/1", nil)
		if got := f.srv.Counts()["subscriber"]; got != 2 {
			t.Errorf("%d subscribers after deleting a segment, want 2", got)
		}
		o = f.must(200, "GET", "/v3/subscriber/1", nil).obj(t)
		if d := cmp.Diff([]any{map[string]any{"id": 2.0, "self": "http://example.com/v3/segment/2"}}, o["segments"]); d != "" {
			t.Errorf("segments after delete (-want +got):\n%s", d)
		}
		if c := f.must(200, "GET", "/v3/content/1", nil).obj(t); !cmp.Equal(c["segments"], []any{}) {
			t.Errorf("content still targets the deleted segment: %v", c["segments"])
		}
	})
	t.Run("date_modified_utc and ids", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{})
		f.seed()
		f.clock.Advance(90 * time.Second)
		o := f.must(200, "PUT", "/v3/story/1", env(map[string]any{"id": 1, "summary": "s"})).obj(t)
		if o["date_modified_utc"] != "2025-03-01 12:01:30" {
			t.Errorf("date_modified_utc %v after update", o["date_modified_utc"])
		}
		if o := f.must(200, "GET", "/v3/content/2", nil).obj(t); o["date_modified_utc"] != "2025-03-01 12:00:00" {
			t.Errorf("untouched item modified: %v", o["date_modified_utc"])
		}
		f.must(200, "PUT", "/v3/segment/1", env(map[string]any{"external_id": "seg-x"}))
		if o := f.must(200, "GET", "/v3/segment/1", nil).obj(t); o["date_modified_utc"] != "2025-03-01 12:01:30" || o["description"] != "Staff" {
			t.Errorf("segment %v", o)
		}
		f.must(204, "DELETE", "/v3/need/4", nil)
		if id := f.create("/v3/link", map[string]any{"title": "x"}); id != 5 {
			t.Errorf("id after a delete %d, want 5: ids are never reused", id)
		}
	})
	t.Run("update merges, null clears, [] empties", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{})
		f.seed()
		o := f.must(200, "PUT", "/v3/story/1", env(map[string]any{"id": 1, "publish_date_utc": nil, "segments": []any{}})).obj(t)
		if _, ok := o["publish_date_utc"]; ok {
			t.Errorf("publish_date_utc not cleared: %v", o)
		}
		if !cmp.Equal(o["segments"], []any{}) || o["title"] != "Story one" || o["external_id"] != "ext-1" {
			t.Errorf("after update %v", o)
		}
	})
	t.Run("interest follows visible content", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{})
		f.seed()
		// Two Sports items for everyone, one News item only for segment 1.
		for range 2 {
			f.create("/v3/link", map[string]any{"title": "s", "categories": []any{map[string]any{"id": 2}}})
		}
		f.must(200, "PUT", "/v3/story/1", env(map[string]any{"id": 1, "exclusive_to_segment": true}))
		l := f.must(200, "GET", "/v3/subscriber/1/subscriber_interest", nil).list(t)
		if got := ids(t, l.Data); !slices.Equal(got, []int64{2, 1}) || l.Data[0]["score"] != 2.0 {
			t.Errorf("Ann's interests %v", l.Data)
		}
		l = f.must(200, "GET", "/v3/subscriber/2/subscriber_interest", nil).list(t)
		if got := ids(t, l.Data); !slices.Equal(got, []int64{2}) {
			t.Errorf("Bob, outside segment 1, sees interests %v", got)
		}
	})
	t.Run("self links follow the host", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{})
		f.seed()
		req := f.request("GET", "/v3/content/1", nil)
		req.Host = "sandbox.test:8089"
		o := f.send(req).obj(t)
		if o["self"] != "http://sandbox.test:8089/v3/content/1" {
			t.Errorf("self %v", o["self"])
		}
	})
}
