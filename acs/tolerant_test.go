package acs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func ptr[T any](v T) *T { return &v }

// TestDecodeTolerant: each way a service may write a value that the spec
// does not pin down reads as the strict shape does.
func TestDecodeTolerant(t *testing.T) {
	t.Parallel()
	ts := func(s string) *Timestamp {
		v, err := ParseTimestamp(s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	tests := []struct {
		name string
		body string
		want Content
	}{
		{"strict", `{"data":{"id":10001,"title":"T","private":true,"need_quantity":3}}`,
			Content{ID: 10001, Title: ptr("T"), Private: ptr(true), NeedQuantity: ptr(int64(3))}},
		{"id as a numeric string", `{"data":{"id":"10001"}}`, Content{ID: 10001}},
		{"id as a whole float", `{"data":{"id":10001.0}}`, Content{ID: 10001}},
		{"quantity as a string", `{"id":1,"need_quantity":" 7 "}`, Content{ID: 1, NeedQuantity: ptr(int64(7))}},
		{"booleans as strings", `{"id":1,"private":"TRUE","evergreen":"false"}`, Content{ID: 1, Private: ptr(true), Evergreen: ptr(false)}},
		{"booleans as 0 and 1", `{"id":1,"private":1,"evergreen":0,"event_all_day":"1"}`, Content{ID: 1, Private: ptr(true), Evergreen: ptr(false), EventAllDay: ptr(true)}},
		{"nulls are absent", `{"id":1,"title":null,"categories":null,"author":null,"publish_date_utc":null,"private":null}`, Content{ID: 1}},
		{"unknown fields ignored", `{"id":1,"legacy_id":"x","_links":{"self":{"href":"/x"}},"tags":[1,"a",null]}`, Content{ID: 1}},
		{"RFC 3339 in another zone", `{"id":1,"publish_date_utc":"2026-03-01T10:30:15.123+02:00"}`, Content{ID: 1, PublishDateUTC: ts("2026-03-01 08:30:15")}},
		{"RFC 3339 without zone", `{"id":1,"publish_date_utc":"2026-03-01T08:30:15"}`, Content{ID: 1, PublishDateUTC: ts("2026-03-01 08:30:15")}},
		{"spec shape with fraction", `{"id":1,"publish_date_utc":"2026-03-01 08:30:15.999"}`, Content{ID: 1, PublishDateUTC: ts("2026-03-01 08:30:15")}},
		{"refs with string ids", `{"id":"1","author":{"id":"5","self":"/a/5"},"categories":[{"id":"2"},{"id":3}]}`,
			Content{ID: 1, Author: &Ref{ID: 5, Self: "/a/5"}, Categories: []Ref{{ID: 2}, {ID: 3}}}},
		{"refs as bare ids", `{"id":1,"author":5,"categories":["2",3]}`, Content{ID: 1, Author: &Ref{ID: 5}, Categories: []Ref{{ID: 2}, {ID: 3}}}},
		{"one ref where a list is due", `{"id":1,"segments":{"id":4}}`, Content{ID: 1, Segments: []Ref{{ID: 4}}}},
		{"string given as a number", `{"id":1,"external_id":12345}`, Content{ID: 1, ExternalID: ptr("12345")}},
		{"keys in another case", `{"ID":"7","Title":"T"}`, Content{ID: 7, Title: ptr("T")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got Content
			found, _, err := decode([]byte(tc.body), &got)
			if err != nil || !found {
				t.Fatalf("decode = %v, %v; want found", found, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeTolerantLists: string ids inside lists, paging numbers as
// strings, and the Raw of a type that keeps it is the object as received.
func TestDecodeTolerantLists(t *testing.T) {
	t.Parallel()
	body := `{"data":[{"id":"1","email":"a@x.test","subscriber_status":{"id":"4"},"department":"HR"},{"id":2,"first_name":null}],"page":"1","page_size":"2","total":"9"}`
	var got []*Subscriber
	found, meta, err := decode([]byte(body), &got)
	if err != nil || !found {
		t.Fatalf("decode = %v, %v", found, err)
	}
	want := []*Subscriber{{ID: 1, Email: "a@x.test", SubscriberStatus: &IDRef{ID: 4}}, {ID: 2}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Subscriber{}, "Raw")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if meta != (pageMeta{1, 2, 9}) {
		t.Errorf("meta = %+v, want page 1, size 2, total 9", meta)
	}
	if raw := string(got[0].Raw); !strings.Contains(raw, `"department":"HR"`) || !strings.Contains(raw, `"id":"1"`) {
		t.Errorf("Raw = %s, want the object as received", raw)
	}
}

// TestDecodeUnreadable: what even tolerance cannot read fails with an
// error naming the field and the value.
func TestDecodeUnreadable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, field, cause, msg string
	}{
		{"id not a number", `{"data":{"id":"ten"}}`, "id", "id", `field id: "ten" is not an integer`},
		{"fractional id", `{"data":{"id":1.5}}`, "id", "id", "field id: 1.5 is not an integer"},
		{"nested id", `{"data":{"id":1,"categories":[{"id":2},{"id":"x"}]}}`, "categories[1].id", "categories.id", `field categories[1].id: "x" is not an integer`},
		{"key in another case", `{"data":{"Id":"ten"}}`, "id", "id", `field id: "ten" is not an integer`},
		{"bad boolean", `{"data":{"id":1,"private":"maybe"}}`, "private", "private", `field private: "maybe" is not a boolean`},
		{"bad timestamp", `{"data":{"id":1,"publish_date_utc":"yesterday"}}`, "publish_date_utc", "publish_date_utc", `field publish_date_utc: "yesterday" is not a timestamp`},
		{"not JSON", `<html>oops</html>`, "", "body", "not JSON"},
		{"two objects", `{"data":[{"id":1},{"id":2}]}`, "", "body", "want one object, got an array of 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Stories.Create(t.Context(), &StoryCreate{Title: ptr("t"), Body: ptr("b")})
			if !errors.Is(err, ErrUnreadable) {
				t.Fatalf("error %v does not match ErrUnreadable", err)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("error %v matches ErrInvalid; the request was carried out", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Field != tc.field || de.Cause() != tc.cause || de.Status != http.StatusCreated {
				t.Errorf("field %q cause %q status %d, want %q %q 201", de.Field, de.Cause(), de.Status, tc.field, tc.cause)
			}
			wantPrefix := "acs: POST /v3/story: the service answered 201 but its body could not be read: " + tc.msg
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Errorf("error %q\nwant it to begin %q", err, wantPrefix)
			}
		})
	}
}

// TestTemplateShapes: a template reads whatever way its flags are given.
func TestTemplateShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want Template
	}{
		{"booleans", `{"data":{"type":"story","fields":[{"name":"external_id","type":"string","searchable":true,"required":false}]}}`,
			Template{Type: "story", Fields: []TemplateField{{Name: "external_id", Type: "string", Searchable: true, Create: true, Update: true}}}},
		{"lists of operations and types", `{"data":{"type":"content","fields":[{"name":"title","required":["create","update"],"searchable":["story","event"],"create":["story"],"update":[]}]}}`,
			Template{Type: "content", Fields: []TemplateField{{Name: "title", Required: true, RequiredFor: []string{"create", "update"}, Searchable: true, SearchableFor: []string{"story", "event"}, Create: true, Update: false}}}},
		{"strings", `{"data":{"fields":[{"name":"email","required":"create","searchable":"yes"},{"name":"id","required":"false","searchable":"1","read_only":"true"}]}}`,
			Template{Fields: []TemplateField{
				{Name: "email", Required: true, RequiredFor: []string{"create"}, Searchable: true, Create: true, Update: true},
				{Name: "id", Searchable: true}}}},
		{"0 and 1, nulls and objects", `{"data":{"fields":[{"name":"a","searchable":1,"required":null,"create_only":1},{"name":"b","required":{"create":true,"update":false},"update_only":true}]}}`,
			Template{Fields: []TemplateField{
				{Name: "a", Searchable: true, Create: true},
				{Name: "b", Required: true, RequiredFor: []string{"create"}, Update: true}}}},
		{"fields by name", `{"data":{"type":"segment","fields":{"description":{"type":"string","required":true},"date_modified_utc":"timestamp"}}}`,
			Template{Type: "segment", Fields: []TemplateField{
				{Name: "date_modified_utc", Type: "timestamp", Create: true, Update: true},
				{Name: "description", Type: "string", Required: true, Create: true, Update: true}}}},
		{"bare list in the request envelope", `{"template":{"version":"3.0","data":[{"name":"a","searchable":true},{"name":"b"}]}}`,
			Template{Fields: []TemplateField{{Name: "a", Searchable: true, Create: true, Update: true}, {Name: "b", Create: true, Update: true}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got Template
			if _, _, err := decode([]byte(tc.body), &got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A template written by encoding/json reads back the same.
	want := Template{Type: "content", Fields: []TemplateField{{Name: "title", Required: true, RequiredFor: []string{"create"}, Searchable: true, SearchableFor: []string{"story"}, Update: true}}}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var back Template
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("read back %s: %v", b, err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	f := TemplateField{Required: true, RequiredFor: []string{"create"}, Searchable: true}
	if !f.RequiredIn("create") || f.RequiredIn("update") || !f.SearchableIn("story") {
		t.Errorf("RequiredIn/SearchableIn of %+v wrong", f)
	}
}

// TestCheckFilterUnreadableTemplate: a template that cannot be read lets
// filters through, is reported once, and is not fetched again.
func TestCheckFilterUnreadableTemplate(t *testing.T) {
	t.Parallel()
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		_, _ = w.Write([]byte(`{"data":{"type":"content","fields":[{"name":"external_id","searchable":{"eq":"sometimes"}}]}}`))
	}))
	defer srv.Close()
	var notes []string
	c, err := NewClient(srv.URL, srv.Client(), WithNotify(func(_ context.Context, err error) { notes = append(notes, err.Error()) }))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Templates.CheckFilter(t.Context(), TypeContent, Filter{}.Eq("external_id", "x")); err != nil {
			t.Fatalf("CheckFilter: %v, want the filter let through", err)
		}
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("template fetched %d times, want once", n)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "template of content cannot be read") || !strings.Contains(notes[0], "searchable") {
		t.Errorf("notes = %q, want one naming the template and the field", notes)
	}
}

// FuzzLenient: the tolerant decoder never panics, and whatever
// encoding/json reads on its own, it reads the same.
func FuzzLenient(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"title":"t","private":true,"publish_date_utc":"2026-01-02 03:04:05","categories":[{"id":2}]}`,
		`{"id":"1","private":"1","author":5,"categories":["2",{"id":"3"}],"publish_date_utc":"2026-01-02T03:04:05.5+02:00"}`,
		`{"id":null,"need_quantity":1e3,"segments":{"id":4},"x":[1,{"y":null}]}`,
		`[{"id":1}]`, `"x"`, `{"id":"ten"}`, `{"id":1.5}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var strict Content
		strictErr := json.Unmarshal(b, &strict)
		var got Content
		err := lenient(b, &got)
		if strictErr == nil {
			if err != nil {
				t.Fatalf("encoding/json read %q, lenient failed: %v", b, err)
			}
			if diff := cmp.Diff(strict, got); diff != "" {
				t.Fatalf("%q read differently (-json +lenient):\n%s", b, diff)
			}
		}
	})
}

// BenchmarkDecodeContentLoose decodes the create answer of
// BenchmarkDecodeContent written loosely (string id, RFC 3339 time, 0/1
// boolean, nulls, extra fields): the slow path, paid only by services
// that answer so.
func BenchmarkDecodeContentLoose(b *testing.B) {
	body := strings.Repeat(`<p>Lorem ipsum dolor <a href="https://example.com/x">sit</a> amet, consectetur adipiscing.</p>`, 16)
	obj := map[string]any{
		"id": "12345", "type": "story", "title": "Item 3 of feed 9: alpha beta gamma delta",
		"external_id": "farm-9:urn:feedfarm:9:3", "body": body, "summary": nil, "private": 0,
		"publish_date_utc": "2026-01-01T02:00:00.000+02:00", "legacy_key": "sb-12345",
		"categories": []any{map[string]any{"id": "1"}, map[string]any{"id": "2"}}, "self": "http://127.0.0.1:8089/v3/content/12345",
	}
	doc, err := json.Marshal(map[string]any{"data": obj, "meta": map[string]any{"style": "loose"}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var c Content
		if found, _, err := decode(doc, &c); err != nil || !found || c.ID != 12345 {
			b.Fatalf("decode = %v, %v, %d", found, err, c.ID)
		}
	}
}
