package acs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// pageServer serves total items in pages, honouring page and page_size, and
// fails page failOn (0: never) with a 404.
func pageServer(t *testing.T, total, failOn int, withMeta bool) *recorder {
	return newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("page_size"))
		if page == 0 {
			page = 1
		}
		if size == 0 {
			size = DefaultPageSize
		}
		if page == failOn {
			reply(w, 404, `{"message":"gone"}`)
			return
		}
		var items []string
		for id := (page-1)*size + 1; id <= min(page*size, total); id++ {
			items = append(items, fmt.Sprintf(`{"id":%d}`, id))
		}
		arr := "[" + strings.Join(items, ",") + "]"
		if withMeta {
			reply(w, 200, fmt.Sprintf(`{"data":%s,"page":%d,"page_size":%d,"total":%d}`, arr, page, size, total))
			return
		}
		reply(w, 200, arr)
	})
}

func collect(t *testing.T, c *Client, opts *ListOptions) ([]int64, error) {
	t.Helper()
	var ids []int64
	for cat, err := range c.Categories.All(context.Background(), opts) {
		if err != nil {
			return ids, err
		}
		ids = append(ids, cat.ID)
	}
	return ids, nil
}

func TestAllPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		total     int
		opts      *ListOptions
		withMeta  bool
		wantPages []string // raw queries, in order
		wantN     int
	}{
		{"default size, short last page", 237, nil, true, []string{"page=1", "page=2", "page=3"}, 237},
		{"full last page then empty", 6, &ListOptions{PageSize: 3}, false, []string{"page=1&page_size=3", "page=2&page_size=3", "page=3&page_size=3"}, 6},
		{"empty collection", 0, nil, false, []string{"page=1"}, 0},
		{"start page and filter", 5, &ListOptions{Page: 2, PageSize: 2, Filter: Filter{}.IsNull("external_id", false)},
			false, []string{
				"filters_json=%7B%22external_id%22%3A%7B%22isnull%22%3Afalse%7D%7D&page=2&page_size=2",
				"filters_json=%7B%22external_id%22%3A%7B%22isnull%22%3Afalse%7D%7D&page=3&page_size=2",
			}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := pageServer(t, tt.total, 0, tt.withMeta)
			c := newTestClient(t, rec)
			ids, err := collect(t, c, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != tt.wantN {
				t.Errorf("got %d items, want %d", len(ids), tt.wantN)
			}
			for i := 1; i < len(ids); i++ {
				if ids[i] != ids[i-1]+1 {
					t.Errorf("ids not consecutive at %d: %d after %d", i, ids[i], ids[i-1])
					break
				}
			}
			var queries []string
			for _, r := range rec.requests() {
				queries = append(queries, r.RawQuery)
			}
			if strings.Join(queries, " | ") != strings.Join(tt.wantPages, " | ") {
				t.Errorf("queries:\n got %v\nwant %v", queries, tt.wantPages)
			}
		})
	}
}

// TestAllStopsOnError: the error is yielded once, after the good pages,
// and nothing follows.
func TestAllStopsOnError(t *testing.T) {
	t.Parallel()
	rec := pageServer(t, 1000, 3, false)
	c := newTestClient(t, rec)
	var ids []int64
	var errs []error
	for cat, err := range c.Categories.All(context.Background(), &ListOptions{PageSize: 10}) {
		if err != nil {
			errs = append(errs, err)
			continue // the iterator must end by itself
		}
		ids = append(ids, cat.ID)
	}
	if len(ids) != 20 || len(errs) != 1 || !errors.Is(errs[0], ErrNotFound) {
		t.Errorf("got %d items and errors %v; want 20 items then one ErrNotFound", len(ids), errs)
	}
	if n := rec.count(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
}

// TestAllBreak: breaking out of the loop stops fetching.
func TestAllBreak(t *testing.T) {
	t.Parallel()
	rec := pageServer(t, 1000, 0, false)
	c := newTestClient(t, rec)
	n := 0
	for _, err := range c.Categories.All(context.Background(), &ListOptions{PageSize: 10}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 15 {
			break
		}
	}
	if got := rec.count(); got != 2 {
		t.Errorf("server saw %d requests, want 2", got)
	}
}

// TestAllServerPageSize: a server that reports a smaller page size than
// requested is not mistaken for the end.
func TestAllServerPageSize(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page < 3 {
			reply(w, 200, fmt.Sprintf(`{"data":[{"id":%d},{"id":%d}],"page_size":2}`, 2*page-1, 2*page))
			return
		}
		reply(w, 200, `{"data":[{"id":5}],"page_size":2}`)
	})
	c := newTestClient(t, rec)
	ids, err := collect(t, c, &ListOptions{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 5 {
		t.Errorf("ids = %v, want 1..5", ids)
	}
}

// TestAllServerCapsPageSize: a server that silently serves at most 100
// entries a page, whatever page_size asks for, holding 250. What it
// reports decides whether a page of 100 is read as the last.
func TestAllServerCapsPageSize(t *testing.T) {
	t.Parallel()
	const total, maxSize = 250, 100
	tests := []struct {
		name     string
		report   string // what the answer carries besides data: "total", "page_size", "both" or ""
		page     int
		pageSize int
		want     int
		requests int
	}{
		{"total reported", "total", 0, 500, 250, 3},
		{"page size reported", "page_size", 0, 500, 250, 3},
		{"both reported", "both", 0, 500, 250, 3},
		{"total reported, from page 2", "total", 2, 500, 150, 2},
		// Nothing reported: a page shorter than asked ends the walk, the
		// one guess left, which asking for the default size avoids.
		{"nothing reported, pages of 100", "", 0, 100, 250, 3},
		{"nothing reported, pages of 500", "", 0, 500, 100, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
				page, _ := strconv.Atoi(r.URL.Query().Get("page"))
				size, _ := strconv.Atoi(r.URL.Query().Get("page_size"))
				page, size = max(page, 1), min(cmp.Or(size, DefaultPageSize), maxSize)
				var items []string
				for id := (page-1)*size + 1; id <= min(page*size, total); id++ {
					items = append(items, fmt.Sprintf(`{"id":%d}`, id))
				}
				meta := map[string]string{
					"total":     fmt.Sprintf(`,"total":%d`, total),
					"page_size": fmt.Sprintf(`,"page_size":%d`, size),
					"both":      fmt.Sprintf(`,"page_size":%d,"total":%d`, size, total),
				}[tt.report]
				reply(w, 200, fmt.Sprintf(`{"data":[%s]%s}`, strings.Join(items, ","), meta))
			})
			c := newTestClient(t, rec)
			ids, err := collect(t, c, &ListOptions{Page: tt.page, PageSize: tt.pageSize})
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != tt.want || rec.count() != tt.requests {
				t.Errorf("got %d categories in %d requests, want %d in %d", len(ids), rec.count(), tt.want, tt.requests)
			}
		})
	}
}

func TestListOptionsInvalid(t *testing.T) {
	t.Parallel()
	for _, o := range []*ListOptions{{Page: -1}, {PageSize: -5}} {
		if _, err := o.query(); !errors.Is(err, ErrInvalid) {
			t.Errorf("query(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}

// drain counts the items of seq, failing on an error.
func drain[T any](t *testing.T, seq iter.Seq2[*T, error]) int {
	t.Helper()
	n := 0
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestAllIterators: every All method walks its own collection path.
func TestAllIterators(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, `{"data":[{"id":1}]}`) })
	c := newTestClient(t, rec)
	ctx := context.Background()
	tests := []struct {
		path  string
		count func() int
	}{
		{"/v3/subscriber", func() int { return drain(t, c.Subscribers.All(ctx, nil)) }},
		{"/v3/unsubscribe", func() int { return drain(t, c.Unsubscribes.All(ctx, nil)) }},
		{"/v3/segment", func() int { return drain(t, c.Segments.All(ctx, nil)) }},
		{"/v3/category", func() int { return drain(t, c.Categories.All(ctx, nil)) }},
		{"/v3/content", func() int { return drain(t, c.Content.All(ctx, nil)) }},
		{"/v3/blast", func() int { return drain(t, c.Blasts.All(ctx, nil)) }},
		{"/v3/content_insights", func() int { return drain(t, c.Insights.AllContent(ctx, nil)) }},
		{"/v3/subscriber_insights", func() int { return drain(t, c.Insights.AllSubscribers(ctx, nil)) }},
	}
	for i, tt := range tests {
		if n := tt.count(); n != 1 {
			t.Errorf("%s: %d items, want 1", tt.path, n)
		}
		r := rec.requests()[i]
		if r.Path != tt.path || r.RawQuery != "page=1" {
			t.Errorf("request %d = %s?%s, want %s?page=1", i, r.Path, r.RawQuery, tt.path)
		}
	}
}
