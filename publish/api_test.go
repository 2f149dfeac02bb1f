package publish_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/publish"
	"github.com/feedworker/feedworker/transform"
)

// TestCreateWithoutIDInTheAnswer covers services whose create answer has no
// body: the id comes from the Location header, else from a look-up by
// external id.
func TestCreateWithoutIDInTheAnswer(t *testing.T) {
	cases := []struct {
		name     string
		location string
		listBody string
		want     int64
		wantErr  bool
	}{
		{"location header", "/v3/story/77", "", 77, false},
		{"look-up by external id", "", `{"data":[{"id":78,"type":"story","external_id":"ext-1"}]}`, 78, false},
		{"neither", "", `{"data":[]}`, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lookups int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/v3/story":
					if c.location != "" {
						w.Header().Set("Location", c.location)
					}
					w.WriteHeader(http.StatusCreated)
				case r.Method == http.MethodGet && r.URL.Path == "/v3/content":
					lookups++
					if !strings.Contains(r.URL.Query().Get("filters_json"), `"external_id":{"eq":"ext-1"}`) {
						t.Errorf("look-up filter = %q", r.URL.Query().Get("filters_json"))
					}
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(c.listBody))
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL)
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			client, err := acs.NewClient(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			id, err := publish.NewACS(client).Create(t.Context(), &transform.Payload{Type: "story", ExternalID: "ext-1", Title: "T"})
			if (err != nil) != c.wantErr || id != c.want {
				t.Errorf("Create = %d, %v; want %d (error %v)", id, err, c.want, c.wantErr)
			}
			if c.location != "" && lookups != 0 {
				t.Errorf("looked up by external id %d times although Location named the id", lookups)
			}
		})
	}
}

// TestFindWhenTheFilterIsRefusedOrIgnored reads every page when the
// service refuses the external_id filter or does not apply it.
func TestFindWhenTheFilterIsRefusedOrIgnored(t *testing.T) {
	// 250 items paged as asked; the wanted one (id 230) is on page 3 of 100.
	page := func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p, size := 1, 100
		fmt.Sscan(q.Get("page"), &p)
		fmt.Sscan(q.Get("page_size"), &size)
		var items []string
		for id := (p-1)*size + 1; id <= min(p*size, 250); id++ {
			ext := fmt.Sprint("item-", id)
			if id == 230 {
				ext = "want"
			}
			items = append(items, fmt.Sprintf(`{"id":%d,"external_id":%q}`, id, ext))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(items, ","))
	}
	for _, mode := range []string{"refused", "ignored"} {
		t.Run(mode, func(t *testing.T) {
			var filtered int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("filters_json") != "" {
					filtered++
					if mode == "refused" {
						w.WriteHeader(http.StatusBadRequest)
						w.Write([]byte(`{"error":{"message":"external_id is not searchable","field":"filters_json.external_id"}}`))
						return
					}
				}
				page(w, r)
			}))
			defer srv.Close()
			client, err := acs.NewClient(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			api := publish.NewACS(client)
			for i := 0; i < 2; i++ {
				f, err := api.Find(t.Context(), "want")
				if err != nil || f.ID != 230 {
					t.Fatalf("Find = %+v, %v; want id 230", f, err)
				}
			}
			if f, err := api.Find(t.Context(), "absent"); err != nil || f.ID != 0 {
				t.Errorf("Find(absent) = %+v, %v; want none", f, err)
			}
			if mode == "refused" && filtered != 1 {
				t.Errorf("the refused filter was sent %d times, want once (then remembered)", filtered)
			}
		})
	}
}

// TestCategoriesFromAServerThatCapsPageSize: a server that serves at most
// 100 categories a page, whatever page_size asks, and reports no paging,
// holds 250. All of them must be seen, or every miss past the first page
// creates a duplicate category.
func TestCategoriesFromAServerThatCapsPageSize(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v3/category" {
			http.NotFound(w, r)
			return
		}
		p, size := 1, 100
		fmt.Sscan(r.URL.Query().Get("page"), &p)
		fmt.Sscan(r.URL.Query().Get("page_size"), &size)
		size = min(size, 100)
		var items []string
		for id := (p-1)*size + 1; id <= min(p*size, 250); id++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"description":"cat %d"}`, id, id))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[%s]`, strings.Join(items, ","))
	}))
	defer srv.Close()
	client, err := acs.NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	cats, err := publish.NewACS(client).Categories(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cats) != 250 || cats[249].Name != "cat 250" {
		t.Errorf("got %d categories; want all 250", len(cats))
	}
}

// bigContentServer serves n content items in pages, never filtering (it
// ignores filters_json), after delay per request.
func bigContentServer(t *testing.T, n int, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		time.Sleep(delay)
		p, size := 1, 100
		fmt.Sscan(r.URL.Query().Get("page"), &p)
		fmt.Sscan(r.URL.Query().Get("page_size"), &size)
		var items []string
		for id := (p-1)*size + 1; id <= min(p*size, n); id++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"external_id":"item-%d"}`, id, id))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestFindScanIsBounded: when external_id cannot be filtered on, the scan
// stops at its page budget, or at half the time the caller has, and says
// it could not tell (ErrUnverifiable) rather than "not there".
func TestFindScanIsBounded(t *testing.T) {
	t.Parallel()
	t.Run("page budget", func(t *testing.T) {
		t.Parallel()
		srv, requests := bigContentServer(t, 6000, 0)
		client, err := acs.NewClient(srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := publish.NewACS(client).Find(t.Context(), "absent")
		if !errors.Is(err, publish.ErrUnverifiable) {
			t.Errorf("Find in 60 pages = %+v, %v; want ErrUnverifiable", f, err)
		}
		if n := requests.Load(); n > publish.DefaultScanPages+2 {
			t.Errorf("%d requests; want at most %d (the filter try, the budget, one more)", n, publish.DefaultScanPages+2)
		}
		// Within the budget the scan still answers.
		api := publish.NewACS(client, publish.WithScanPages(60))
		if f, err := api.Find(t.Context(), "item-5999"); err != nil || f.ID != 5999 {
			t.Errorf("Find within the budget = %+v, %v; want id 5999", f, err)
		}
	})
	t.Run("time budget", func(t *testing.T) {
		t.Parallel()
		srv, _ := bigContentServer(t, 100000, 20*time.Millisecond)
		client, err := acs.NewClient(srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = publish.NewACS(client, publish.WithScanPages(1000)).Find(ctx, "absent")
		if !errors.Is(err, publish.ErrUnverifiable) || ctx.Err() != nil {
			t.Errorf("Find = %v (context %v); want ErrUnverifiable with time left for the POST", err, ctx.Err())
		}
		if took := time.Since(start); took > 450*time.Millisecond {
			t.Errorf("Find took %v of the 600ms; want about half", took)
		}
	})
}
