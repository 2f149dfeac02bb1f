package sandbox

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestValidation sends one bad request per rule and expects a 400 naming the
// field, with nothing stored.
func TestValidation(t *testing.T) {
	t.Parallel()
	ref := func(id any) map[string]any { return map[string]any{"id": id} }
	story := func(kv ...any) map[string]any {
		m := map[string]any{"title": "T"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	sub := func(kv ...any) map[string]any {
		m := subscriberBody("Zed", "zed@example.com")
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "(absent)" {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	type tc struct {
		name   string
		method string
		path   string
		ctype  string // "" is application/json; "-" is none
		body   any
		want   int
		field  string
	}
	tests := []tc{
		// Envelope and Content-Type (spec 2.1).
		{"no content type", "POST", "/v3/story", "-", env(story()), 400, "Content-Type"},
		{"text content type", "POST", "/v3/story", "text/plain", env(story()), 400, "Content-Type"},
		{"form content type", "POST", "/v3/story", "application/x-www-form-urlencoded", env(story()), 400, "Content-Type"},
		{"latin1 charset", "POST", "/v3/story", "application/json; charset=latin1", env(story()), 400, "Content-Type"},
		{"utf-8 charset is fine", "POST", "/v3/story", "application/json; charset=UTF-8", env(story()), 201, ""},
		{"empty body", "POST", "/v3/story", "", "", 400, "template"},
		{"not JSON", "POST", "/v3/story", "", "{template", 400, "body"},
		{"two JSON values", "POST", "/v3/story", "", `{"template":{"version":"3.0","data":[{"title":"a"}]}} {}`, 400, "body"},
		{"top-level array", "POST", "/v3/story", "", `[{"title":"a"}]`, 400, "template"},
		{"bare object", "POST", "/v3/story", "", story(), 400, "title"},
		{"extra top-level key", "POST", "/v3/story", "", `{"template":{"version":"3.0","data":[{"title":"a"}]},"x":1}`, 400, "x"},
		{"template not object", "POST", "/v3/story", "", `{"template":[]}`, 400, "template"},
		{"no version", "POST", "/v3/story", "", `{"template":{"data":[{"title":"a"}]}}`, 400, "template.version"},
		{"version 2.0", "POST", "/v3/story", "", `{"template":{"version":"2.0","data":[{"title":"a"}]}}`, 400, "template.version"},
		{"version number", "POST", "/v3/story", "", `{"template":{"version":3.0,"data":[{"title":"a"}]}}`, 400, "template.version"},
		{"extra template key", "POST", "/v3/story", "", `{"template":{"version":"3.0","data":[{"title":"a"}],"page":1}}`, 400, "template.page"},
		{"no data", "POST", "/v3/story", "", `{"template":{"version":"3.0"}}`, 400, "template.data"},
		{"data object", "POST", "/v3/story", "", `{"template":{"version":"3.0","data":{"title":"a"}}}`, 400, "template.data"},
		{"data empty", "POST", "/v3/story", "", env(), 400, "template.data"},
		{"data two objects", "POST", "/v3/story", "", env(story(), story()), 400, "template.data"},
		{"data of string", "POST", "/v3/story", "", `{"template":{"version":"3.0","data":["a"]}}`, 400, "template.data[0]"},
		{"duplicate key", "POST", "/v3/story", "", `{"template":{"version":"3.0","data":[{"title":"a","title":"b"}]}}`, 400, "title"},
		{"body too large", "POST", "/v3/story", "", env(story("body", strings.Repeat("x", maxBody))), 413, ""},

		// Fields a type has, and unknown ones (spec 2.7; the full table is TestContentFieldTable).
		{"unknown field", "POST", "/v3/story", "", env(story("colour", "red")), 400, "colour"},
		{"story external_url", "POST", "/v3/story", "", env(story("external_url", "https://x")), 400, "external_url"},
		{"event publish_date_utc", "POST", "/v3/event", "", env(story("publish_date_utc", "2025-01-01 00:00:00")), 400, "publish_date_utc"},
		{"need external_url on create", "POST", "/v3/need", "", env(story("external_url", "https://x")), 400, "external_url"},
		{"need publish_date_utc on update", "PUT", "/v3/need/4", "", env(story("id", 4, "publish_date_utc", "2025-01-01 00:00:00")), 400, "publish_date_utc"},
		{"id on create", "POST", "/v3/story", "", env(story("id", 9)), 400, "id"},
		{"self on create", "POST", "/v3/link", "", env(story("self", "http://x/v3/content/9")), 400, "self"},
		{"type on create", "POST", "/v3/link", "", env(story("type", "link")), 400, "type"},
		{"date_modified_utc on create", "POST", "/v3/link", "", env(story("date_modified_utc", "2025-01-01 00:00:00")), 400, "date_modified_utc"},

		// Titles and types of fields.
		{"no title", "POST", "/v3/story", "", env(map[string]any{"summary": "s"}), 400, "title"},
		{"empty title", "POST", "/v3/event", "", env(map[string]any{"title": ""}), 400, "title"},
		{"blank title", "POST", "/v3/link", "", env(map[string]any{"title": " \t"}), 400, "title"},
		{"null title", "POST", "/v3/need", "", env(map[string]any{"title": nil}), 400, "title"},
		{"numeric title", "POST", "/v3/story", "", env(map[string]any{"title": 5}), 400, "title"},
		{"title cleared on update", "PUT", "/v3/story/1", "", env(story("id", 1, "title", nil)), 400, "title"},
		{"title emptied on update", "PUT", "/v3/story/1", "", env(story("id", 1, "title", "")), 400, "title"},
		{"numeric summary", "POST", "/v3/story", "", env(story("summary", 1)), 400, "summary"},
		{"string boolean", "POST", "/v3/story", "", env(story("private", "true")), 400, "private"},
		{"numeric boolean", "POST", "/v3/story", "", env(story("evergreen", 1)), 400, "evergreen"},
		{"fractional integer", "POST", "/v3/need", "", env(story("need_quantity", 1.5)), 400, "need_quantity"},
		{"integer written 1.0", "POST", "/v3/need", "", `{"template":{"version":"3.0","data":[{"title":"a","need_quantity":1.0}]}}`, 400, "need_quantity"},
		{"integer written 1e3", "POST", "/v3/need", "", `{"template":{"version":"3.0","data":[{"title":"a","need_quantity":1e3}]}}`, 400, "need_quantity"},
		{"string integer", "POST", "/v3/need", "", env(story("need_quantity", "3")), 400, "need_quantity"},
		{"negative quantity", "POST", "/v3/need", "", env(story("need_quantity", -1)), 400, "need_quantity"},
		{"ISO timestamp", "POST", "/v3/story", "", env(story("publish_date_utc", "2025-03-01T12:00:00Z")), 400, "publish_date_utc"},
		{"timestamp without seconds", "POST", "/v3/story", "", env(story("expiration_date_utc", "2025-03-01 12:00")), 400, "expiration_date_utc"},
		{"one-digit month", "POST", "/v3/story", "", env(story("publish_date_utc", "2025-3-01 12:00:00")), 400, "publish_date_utc"},
		{"one-digit hour", "POST", "/v3/story", "", env(story("publish_date_utc", "2025-03-01 1:00:00")), 400, "publish_date_utc"},
		{"fraction", "POST", "/v3/story", "", env(story("publish_date_utc", "2025-03-01 12:00:00.5")), 400, "publish_date_utc"},
		{"zone", "POST", "/v3/story", "", env(story("publish_date_utc", "2025-03-01 12:00:00 +0000")), 400, "publish_date_utc"},
		{"February 30", "POST", "/v3/story", "", env(story("priority_until_date_utc", "2025-02-30 12:00:00")), 400, "priority_until_date_utc"},
		{"hour 24", "POST", "/v3/event", "", env(story("event_start_date_time_utc", "2025-03-01 24:00:00")), 400, "event_start_date_time_utc"},
		{"numeric timestamp", "POST", "/v3/need", "", env(story("need_by_date_utc", 1740830400)), 400, "need_by_date_utc"},
		{"ref as number", "POST", "/v3/story", "", env(story("author", 1)), 400, "author"},
		{"ref without id", "POST", "/v3/story", "", env(story("author", map[string]any{})), 400, "author.id"},
		{"ref id zero", "POST", "/v3/story", "", env(story("priority", ref(0))), 400, "priority.id"},
		{"ref id string", "POST", "/v3/story", "", env(story("status", ref("1"))), 400, "status.id"},
		{"ref extra key", "POST", "/v3/event", "", env(story("event_time_zone", map[string]any{"id": 1, "name": "UTC"})), 400, "event_time_zone.name"},
		{"ref numeric self", "POST", "/v3/story", "", env(story("author", map[string]any{"id": 1, "self": 1})), 400, "author.self"},
		{"ref with self is fine", "POST", "/v3/story", "", env(story("author", map[string]any{"id": 1, "self": "http://x/v3/author/1"})), 201, ""},
		{"categories not array", "POST", "/v3/story", "", env(story("categories", ref(1))), 400, "categories"},
		{"category missing", "POST", "/v3/story", "", env(story("categories", []any{ref(1), ref(99)})), 400, "categories[1].id"},
		{"category twice", "POST", "/v3/link", "", env(story("categories", []any{ref(1), ref(1)})), 400, "categories[1].id"},
		{"segment missing", "POST", "/v3/event", "", env(story("segments", []any{ref(42)})), 400, "segments[0].id"},
		{"segment missing on update", "PUT", "/v3/need/4", "", env(story("id", 4, "segments", []any{ref(42)})), 400, "segments[0].id"},

		// PUT id (spec 2.7: the update body carries id).
		{"content update without id", "PUT", "/v3/story/1", "", env(story()), 400, "id"},
		{"content update id mismatch", "PUT", "/v3/link/3", "", env(story("id", 1)), 400, "id"},
		{"content update id string", "PUT", "/v3/event/2", "", env(story("id", "2")), 400, "id"},
		{"segment update id mismatch", "PUT", "/v3/segment/1", "", env(map[string]any{"id": 2, "description": "x"}), 400, "id"},
		{"subscriber update id mismatch", "PUT", "/v3/subscriber/1", "", env(sub("id", 2)), 400, "id"},
		{"blast update id mismatch", "PUT", "/v3/blast/1", "", env(map[string]any{"id": 7}), 400, "id"},

		// Subscribers (spec 2.3).
		{"no first_name", "POST", "/v3/subscriber", "", env(sub("first_name", "(absent)")), 400, "first_name"},
		{"no last_name", "POST", "/v3/subscriber", "", env(sub("last_name", "(absent)")), 400, "last_name"},
		{"no email", "POST", "/v3/subscriber", "", env(sub("email", "(absent)")), 400, "email"},
		{"no status", "POST", "/v3/subscriber", "", env(sub("subscriber_status", "(absent)")), 400, "subscriber_status"},
		{"no privacy", "POST", "/v3/subscriber", "", env(sub("subscriber_privacy_level", "(absent)")), 400, "subscriber_privacy_level"},
		{"empty first_name", "POST", "/v3/subscriber", "", env(sub("first_name", "")), 400, "first_name"},
		{"bad email", "POST", "/v3/subscriber", "", env(sub("email", "zed")), 400, "email"},
		{"email with name", "POST", "/v3/subscriber", "", env(sub("email", "Zed <zed@example.com>")), 400, "email"},
		{"status 1 refused", "POST", "/v3/subscriber", "", env(sub("subscriber_status", ref(1))), 400, "subscriber_status"},
		{"status 5", "POST", "/v3/subscriber", "", env(sub("subscriber_status", ref(5))), 400, "subscriber_status"},
		{"status as number", "POST", "/v3/subscriber", "", env(sub("subscriber_status", 4)), 400, "subscriber_status"},
		{"status with self", "POST", "/v3/subscriber", "", env(sub("subscriber_status", map[string]any{"id": 4, "self": "x"})), 400, "subscriber_status.self"},
		{"privacy 0", "POST", "/v3/subscriber", "", env(sub("subscriber_privacy_level", ref(0))), 400, "subscriber_privacy_level.id"},
		{"privacy 4", "POST", "/v3/subscriber", "", env(sub("subscriber_privacy_level", ref(4))), 400, "subscriber_privacy_level"},
		{"segments are read-only", "POST", "/v3/subscriber", "", env(sub("segments", []any{ref(1)})), 400, "segments"},
		{"unknown subscriber field", "POST", "/v3/subscriber", "", env(sub("department", "IT")), 400, "department"},
		{"status 1 on update", "PUT", "/v3/subscriber/1", "", env(sub("subscriber_status", ref(1))), 400, "subscriber_status"},
		{"update without status", "PUT", "/v3/subscriber/1", "", env(sub("subscriber_status", "(absent)")), 400, "subscriber_status"},
		{"update without privacy", "PUT", "/v3/subscriber/1", "", env(map[string]any{"subscriber_status": ref(2)}), 400, "subscriber_privacy_level"},
		{"update clears email", "PUT", "/v3/subscriber/1", "", env(sub("email", nil)), 400, "email"},
		{"update without names is fine", "PUT", "/v3/subscriber/1", "", env(map[string]any{"subscriber_status": ref(2), "subscriber_privacy_level": ref(3)}), 200, ""},

		// Unsubscribe (spec 2.4).
		{"departure code 13", "POST", "/v3/subscriber/2/unsubscribe", "", env(map[string]any{"departure_code": ref(13)}), 400, "departure_code"},
		{"departure code 0", "POST", "/v3/subscriber/2/unsubscribe", "", env(map[string]any{"departure_code": ref(0)}), 400, "departure_code.id"},
		{"termination date shape", "POST", "/v3/subscriber/2/unsubscribe", "", env(map[string]any{"termination_date_utc": "2025-02-01"}), 400, "termination_date_utc"},
		{"termination voluntary string", "POST", "/v3/subscriber/2/unsubscribe", "", env(map[string]any{"termination_voluntary": "yes"}), 400, "termination_voluntary"},
		{"unsubscribe with name", "POST", "/v3/subscriber/2/unsubscribe", "", env(map[string]any{"first_name": "B"}), 400, "first_name"},
		{"unsubscribe bad envelope", "POST", "/v3/subscriber/2/unsubscribe", "", `{"template":{"version":"3.0","data":[]}}`, 400, "template.data"},
		{"unsubscribe body without type", "POST", "/v3/subscriber/2/unsubscribe", "-", env(map[string]any{}), 400, "Content-Type"},

		// Segments, categories, blasts.
		{"segment without description", "POST", "/v3/segment", "", env(map[string]any{"external_id": "x"}), 400, "description"},
		{"segment empty description", "POST", "/v3/segment", "", env(map[string]any{"description": ""}), 400, "description"},
		{"segment numeric external_id", "POST", "/v3/segment", "", env(map[string]any{"description": "d", "external_id": 5}), 400, "external_id"},
		{"segment date_modified_utc", "PUT", "/v3/segment/1", "", env(map[string]any{"date_modified_utc": "2025-01-01 00:00:00"}), 400, "date_modified_utc"},
		{"category without description", "POST", "/v3/category", "", env(map[string]any{}), 400, "description"},
		{"category blank description", "POST", "/v3/category", "", env(map[string]any{"description": "  "}), 400, "description"},
		{"category unknown field", "POST", "/v3/category", "", env(map[string]any{"description": "d", "parent": 1}), 400, "parent"},
		{"blast status 5", "POST", "/v3/blast", "", env(map[string]any{"status": ref(5)}), 400, "status"},
		{"blast reply_to domain", "POST", "/v3/blast", "", env(map[string]any{"reply_to_email": "me@elsewhere.org"}), 400, "reply_to_email"},
		{"blast reply_to shape", "POST", "/v3/blast", "", env(map[string]any{"reply_to_email": "example.com"}), 400, "reply_to_email"},
		{"blast segment missing", "POST", "/v3/blast", "", env(map[string]any{"target_segments": []any{ref(9)}}), 400, "target_segments[0].id"},
		{"blast category missing", "POST", "/v3/blast", "", env(map[string]any{"target_categories": []any{ref(2), ref(9)}}), 400, "target_categories[1].id"},
		{"blast merge field without value", "POST", "/v3/blast", "", env(map[string]any{"blast_merge_fields": []any{map[string]any{"id": 1, "type": ref(1)}}}), 400, "blast_merge_fields[0].value"},
		{"blast merge field type", "POST", "/v3/blast", "", env(map[string]any{"blast_merge_fields": []any{map[string]any{"id": 1, "type": 1, "value": "v"}}}), 400, "blast_merge_fields[0].type"},
		{"blast schedule shape", "POST", "/v3/blast", "", env(map[string]any{"date_scheduled_utc": "tomorrow"}), 400, "date_scheduled_utc"},

		// Segment add body.
		{"add unknown subscriber", "POST", "/v3/segment/1/subscriber", "", env(map[string]any{"id": 99}), 400, "id"},
		{"add without id", "POST", "/v3/segment/1/subscriber", "", env(map[string]any{}), 400, "id"},
		{"add extra key", "POST", "/v3/segment/1/subscriber", "", env(map[string]any{"id": 1, "email": "x"}), 400, "email"},
		{"add string id", "POST", "/v3/segment/1/subscriber", "", env(map[string]any{"id": "1"}), 400, "id"},

		// Query parameters where none belong.
		{"query on item", "GET", "/v3/content/1?expand=all", "", nil, 400, "expand"},
		{"query on create", "POST", "/v3/story?page=1", "", env(story()), 400, "page"},
		{"query on delete", "DELETE", "/v3/story/1?force=1", "", nil, 400, "force"},
	}
	f := newFixture(t, Options{})
	f.seed()
	before := f.srv.Counts()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := f.request(tt.method, tt.path, tt.body)
			switch tt.ctype {
			case "-":
				req.Header.Del("Content-Type")
			case "":
			default:
				req.Header.Set("Content-Type", tt.ctype)
			}
			res := f.send(req)
			if res.status != tt.want {
				t.Fatalf("status %d, want %d; body %s", res.status, tt.want, res.body)
			}
			if tt.want < 400 {
				return
			}
			if e := res.apiErr(t); e.Error.Field != tt.field {
				t.Errorf("field %q, want %q (message %q)", e.Error.Field, tt.field, e.Error.Message)
			}
		})
	}
	after := f.srv.Counts()
	// The three 2xx cases above created two stories (utf-8, ref with self)
	// and updated a subscriber.
	before["story"] += 2
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("counts after refused requests %v, want %v", after, before)
	}
	if o := f.must(http.StatusOK, "GET", "/v3/subscriber/2", nil).obj(t); o["id"] != 2.0 {
		t.Errorf("refused unsubscribes left subscriber 2 as %v", o)
	}
}

// specRow is one row of spec 2.7: field, a valid value, and the Story,
// Event, Link and Need cells ("yes", "no", "create", "update").
type specRow struct {
	field                    string
	value                    any
	story, event, link, need string
}

// specTable27 transcribes spec 2.7 independently of the implementation.
func specTable27() []specRow {
	return []specRow{
		{"author", map[string]any{"id": 1}, "yes", "yes", "yes", "yes"},
		{"title", "A title", "yes", "yes", "yes", "yes"},
		{"summary", "s", "yes", "yes", "yes", "yes"},
		{"body", "<p>b</p>", "yes", "yes", "yes", "yes"},
		{"more_button_text", "More", "yes", "yes", "yes", "yes"},
		{"image_url", "https://example.org/i.png", "yes", "yes", "yes", "yes"},
		{"categories", []any{map[string]any{"id": 1}}, "yes", "yes", "yes", "yes"},
		{"external_id", "x-1", "yes", "yes", "yes", "yes"},
		{"priority", map[string]any{"id": 2}, "yes", "yes", "yes", "yes"},
		{"priority_until_date_utc", "2025-05-01 00:00:00", "yes", "yes", "yes", "yes"},
		{"publish_date_utc", "2025-05-01 00:00:00", "yes", "no", "yes", "create"},
		{"expiration_date_utc", "2025-06-01 00:00:00", "yes", "no", "yes", "no"},
		{"private", true, "yes", "yes", "yes", "yes"},
		{"segments", []any{map[string]any{"id": 1}}, "yes", "yes", "yes", "yes"},
		{"exclusive_to_segment", false, "yes", "yes", "yes", "yes"},
		{"available_in_partner", true, "yes", "yes", "yes", "yes"},
		{"enable_comments", true, "yes", "yes", "yes", "yes"},
		{"enable_link_tracking", false, "yes", "yes", "yes", "yes"},
		{"status", map[string]any{"id": 1}, "yes", "yes", "yes", "yes"},
		{"evergreen", true, "yes", "no", "yes", "no"},
		{"external_url", "https://example.org/a", "no", "yes", "yes", "update"},
		{"event_location", "Hall", "no", "yes", "no", "no"},
		{"event_street_address", "1 Main St", "no", "yes", "no", "no"},
		{"event_city", "Lyon", "no", "yes", "no", "no"},
		{"event_postal_code", "69001", "no", "yes", "no", "no"},
		{"event_region", "ARA", "no", "yes", "no", "no"},
		{"event_country", "FR", "no", "yes", "no", "no"},
		{"event_all_day", true, "no", "yes", "no", "no"},
		{"event_start_date_time_utc", "2025-05-01 09:00:00", "no", "yes", "no", "no"},
		{"event_end_date_time_utc", "2025-05-01 17:00:00", "no", "yes", "no", "no"},
		{"event_time_zone", map[string]any{"id": 3}, "no", "yes", "no", "no"},
		{"event_registration_url", "https://example.org/r", "no", "yes", "no", "no"},
		{"need_quantity", 12, "no", "no", "no", "create"},
		{"need_by_date_utc", "2025-05-01 00:00:00", "no", "no", "no", "create"},
	}
}

// TestContentFieldTable sends every field of spec 2.7 to every content type,
// on create and on update, and expects exactly the cells of the table to be
// accepted; an accepted value must read back through /v3/content.
func TestContentFieldTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	ids := map[string]int64{"story": 1, "event": 2, "link": 3, "need": 4}
	for _, row := range specTable27() {
		cells := map[string]string{"story": row.story, "event": row.event, "link": row.link, "need": row.need}
		for _, typ := range []string{"story", "event", "link", "need"} {
			for _, op := range []string{"create", "update"} {
				t.Run(fmt.Sprintf("%s/%s/%s", typ, op, row.field), func(t *testing.T) {
					cell := cells[typ]
					allowed := cell == "yes" || cell == op
					var res response
					if op == "create" {
						body := map[string]any{"title": "T", row.field: row.value}
						res = f.do("POST", "/v3/"+typ, env(body))
					} else {
						body := map[string]any{"id": ids[typ], row.field: row.value}
						res = f.do("PUT", fmt.Sprintf("/v3/%s/%d", typ, ids[typ]), env(body))
					}
					want := map[bool]int{true: 201, false: 400}[allowed]
					if op == "update" && allowed {
						want = 200
					}
					if res.status != want {
						t.Fatalf("%s %s with %s (cell %q): status %d, want %d; body %s", op, typ, row.field, cell, res.status, want, res.body)
					}
					if !allowed {
						if e := res.apiErr(t); e.Error.Field != row.field {
							t.Errorf("field %q, want %q", e.Error.Field, row.field)
						}
						return
					}
					id := int64(res.obj(t)["id"].(float64))
					got := f.must(200, "GET", fmt.Sprintf("/v3/content/%d", id), nil).obj(t)
					if _, ok := got[row.field]; !ok {
						t.Errorf("%s not read back: %v", row.field, got)
					}
				})
			}
		}
	}
}
