package acs

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestFilterOperators(t *testing.T) {
	t.Parallel()
	ts, _ := ParseTimestamp("2026-03-01 08:30:00")
	tests := []struct {
		name string
		f    Filter
		want string
	}{
		{"eq", Filter{}.Eq("external_id", "feed:1 & 2"), `{"external_id":{"eq":"feed:1 & 2"}}`},
		{"neq", Filter{}.Neq("title", "x"), `{"title":{"neq":"x"}}`},
		{"lt", Filter{}.Lt("id", 10), `{"id":{"lt":10}}`},
		{"lte", Filter{}.Lte("date_modified_utc", ts), `{"date_modified_utc":{"lte":"2026-03-01 08:30:00"}}`},
		{"gt", Filter{}.Gt("date_modified_utc", time.Date(2026, 3, 1, 9, 30, 0, 0, time.FixedZone("CET", 3600))), `{"date_modified_utc":{"gt":"2026-03-01 08:30:00"}}`},
		{"gte", Filter{}.Gte("need_quantity", 2.5), `{"need_quantity":{"gte":2.5}}`},
		{"in", Filter{}.In("id", 1, int64(2), "3", ts), `{"id":{"in":"1,2,3,2026-03-01 08:30:00"}}`},
		{"isnull true", Filter{}.IsNull("external_id", true), `{"external_id":{"isnull":true}}`},
		{"isnull false", Filter{}.IsNull("external_id", false), `{"external_id":{"isnull":false}}`},
		{"several in order", Filter{}.Eq("b", 1).Eq("a", 2), `{"b":{"eq":1},"a":{"eq":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := (&ListOptions{Filter: tt.f}).query()
			if err != nil {
				t.Fatal(err)
			}
			// The query string carries the exact JSON, percent-encoded.
			raw := q.Encode()
			if want := "filters_json=" + url.QueryEscape(tt.want); raw != want {
				t.Errorf("query = %s, want %s", raw, want)
			}
			back, err := url.ParseQuery(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := back.Get("filters_json"); got != tt.want {
				t.Errorf("filters_json = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestFilterOnTheWire checks the encoding a server actually receives,
// including characters that must be escaped.
func TestFilterOnTheWire(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, 200, `{"data":[]}`)
	})
	c := newTestClient(t, rec)
	f := Filter{}.Eq("external_id", `a+b&c="d"`).In("id", 1, 2)
	if _, _, err := c.Content.List(context.Background(), &ListOptions{Filter: f}); err != nil {
		t.Fatal(err)
	}
	got := rec.requests()[0].RawQuery
	want := "filters_json=%7B%22external_id%22%3A%7B%22eq%22%3A%22a%2Bb%26c%3D%5C%22d%5C%22%22%7D%2C%22id%22%3A%7B%22in%22%3A%221%2C2%22%7D%7D"
	if got != want {
		t.Errorf("raw query:\n got %s\nwant %s", got, want)
	}
}

func TestFilterInvalid(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, `[]`) })
	c := newTestClient(t, rec)
	for name, f := range map[string]Filter{
		"same field twice":  Filter{}.Gte("id", 1).Lte("id", 5),
		"comma in in item":  Filter{}.In("title", "a,b"),
		"empty in":          Filter{}.In("id"),
		"empty field":       Filter{}.Eq("", 1),
		"unsupported item":  Filter{}.In("id", []int{1}),
		"zero timestamp":    Filter{}.In("date_modified_utc", Timestamp{}),
		"unmarshalable eq":  Filter{}.Eq("id", make(chan int)),
		"zero timestamp eq": Filter{}.Eq("date_modified_utc", Timestamp{}),
	} {
		_, _, err := c.Content.List(context.Background(), &ListOptions{Filter: f})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if rec.count() != 0 {
		t.Errorf("server saw %d requests, want none", rec.count())
	}
}

// TestFilterBranches: filters built from one base do not share state.
func TestFilterBranches(t *testing.T) {
	t.Parallel()
	base := Filter{}.Eq("a", 1).Eq("b", 2).Eq("c", 3)
	x := base.Eq("x", 1)
	y := base.Eq("y", 1)
	if got := x.String(); got != `{"a":{"eq":1},"b":{"eq":2},"c":{"eq":3},"x":{"eq":1}}` {
		t.Errorf("x = %s", got)
	}
	if got := y.String(); got != `{"a":{"eq":1},"b":{"eq":2},"c":{"eq":3},"y":{"eq":1}}` {
		t.Errorf("y = %s", got)
	}
	if !(Filter{}).IsZero() || base.IsZero() {
		t.Error("IsZero is wrong")
	}
}

// TestFilterCheck: with WithFilterCheck a non-searchable field fails before
// the list request, and the template is fetched once.
func TestFilterCheck(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/v3/content/template" {
			reply(w, 200, `{"data":{"type":"content","fields":[{"name":"external_id","searchable":true},{"name":"title","searchable":false}]}}`)
			return
		}
		reply(w, 200, `{"data":[]}`)
	})
	c := newTestClient(t, rec, WithFilterCheck())
	ctx := context.Background()

	_, _, err := c.Content.List(ctx, &ListOptions{Filter: Filter{}.Eq("title", "x")})
	var ve *ValidationError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) || ve.Field != "filters_json.title" {
		t.Fatalf("err = %v, want a ValidationError on filters_json.title", err)
	}
	if _, _, err := c.Content.List(ctx, &ListOptions{Filter: Filter{}.Eq("external_id", "x")}); err != nil {
		t.Fatalf("searchable field refused: %v", err)
	}
	if _, _, err := c.Content.List(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range rec.requests() {
		paths = append(paths, r.Path)
	}
	want := []string{"/v3/content/template", "/v3/content", "/v3/content"}
	if len(paths) != len(want) {
		t.Fatalf("paths = %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Errorf("paths = %v, want %v", paths, want)
			break
		}
	}
}
