package acs

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDecodeBareObject(t *testing.T) {
	var got Category
	found, _, err := decode([]byte(`{"id":3,"description":"News","unknown":[1,2]}`), &got)
	if err != nil || !found {
		t.Fatalf("decode = %v, %v; want found, nil", found, err)
	}
	if diff := cmp.Diff(Category{ID: 3, Description: "News"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDecodeBareArray(t *testing.T) {
	var got []*Category
	found, meta, err := decode([]byte(` [{"id":1},{"id":2,"extra":true}] `), &got)
	if err != nil || !found {
		t.Fatalf("decode = %v, %v; want found, nil", found, err)
	}
	if diff := cmp.Diff([]*Category{{ID: 1}, {ID: 2}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if meta != (pageMeta{}) {
		t.Errorf("meta = %+v, want none from a bare array", meta)
	}
}

func TestDecodeDataObject(t *testing.T) {
	var got Segment
	found, _, err := decode([]byte(`{"data":{"id":5,"description":"Staff","date_modified_utc":"2026-01-02 03:04:05"}}`), &got)
	if err != nil || !found {
		t.Fatalf("decode = %v, %v; want found, nil", found, err)
	}
	ts, _ := ParseTimestamp("2026-01-02 03:04:05")
	if diff := cmp.Diff(Segment{ID: 5, Description: "Staff", DateModifiedUTC: &ts}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDecodeDataArrayOfOne(t *testing.T) {
	var got Category
	found, _, err := decode([]byte(`{"data":[{"id":9}]}`), &got)
	if err != nil || !found || got.ID != 9 {
		t.Fatalf("decode = %v, %v, %+v; want id 9", found, err, got)
	}
}

func TestDecodeDataList(t *testing.T) {
	var got []*Subscriber
	found, meta, err := decode([]byte(`{"data":[{"id":1,"email":"a@x.test","department":"HR"}],"page":2,"page_size":1,"total":7}`), &got)
	if err != nil || !found {
		t.Fatalf("decode = %v, %v; want found, nil", found, err)
	}
	if diff := cmp.Diff([]*Subscriber{{ID: 1, Email: "a@x.test"}}, got, cmpopts.IgnoreFields(Subscriber{}, "Raw")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if string(got[0].Raw) != `{"id":1,"email":"a@x.test","department":"HR"}` {
		t.Errorf("raw = %s, want the whole object", got[0].Raw)
	}
	if want := (pageMeta{Page: 2, PageSize: 1, Total: 7}); meta != want {
		t.Errorf("meta = %+v, want %+v", meta, want)
	}
}

func TestDecodeEnvelope(t *testing.T) {
	var got Category
	found, _, err := decode([]byte(`{"template":{"version":"3.0","data":[{"id":4,"description":"Events"}]}}`), &got)
	if err != nil || !found {
		t.Fatalf("decode = %v, %v; want found, nil", found, err)
	}
	if diff := cmp.Diff(Category{ID: 4, Description: "Events"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var list []*Category
	if _, _, err := decode([]byte(`{"template":{"version":"3.0","data":[{"id":4},{"id":5}]}}`), &list); err != nil || len(list) != 2 {
		t.Errorf("envelope list = %v, %v; want 2 items", list, err)
	}
}

func TestDecodeObjectAsList(t *testing.T) {
	var got []*Category
	found, _, err := decode([]byte(`{"data":{"id":1}}`), &got)
	if err != nil || !found || len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("decode = %v, %v, %v; want a list of one", found, err, got)
	}
}

func TestDecodeEmpty(t *testing.T) {
	for _, body := range []string{"", "  ", "null", `{"data":null}`, `{"data":[]}`, `[]`, `{"template":{"version":"3.0","data":[]}}`} {
		var one Category
		found, _, err := decode([]byte(body), &one)
		if err != nil || found {
			t.Errorf("decode(%q) into object = %v, %v; want not found, nil", body, found, err)
		}
		var list []*Category
		found, _, err = decode([]byte(body), &list)
		if err != nil || found || len(list) != 0 {
			t.Errorf("decode(%q) into list = %v, %v, %v; want not found, nil", body, found, err, list)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, body := range []string{
		`{"data":[{"id":1},{"id":2}]}`,                // several where one is expected
		`{"id":"seven"}`,                              // wrong type
		`{"data":{"id":1}`,                            // truncated
		`{"template":"x"}`,                            // envelope of the wrong shape
		`{"id":1,"date_modified_utc":"last Tuesday"}`, // timestamp of the wrong shape
	} {
		var one Segment
		if _, _, err := decode([]byte(body), &one); err == nil {
			t.Errorf("decode(%s) succeeded, want an error", body)
		}
	}
}

// Insight keeps any object whole, since the spec shows none of its fields.
func TestDecodeInsightRaw(t *testing.T) {
	var got []*Insight
	if _, _, err := decode([]byte(`[{"content_id":1,"opens":3}]`), &got); err != nil {
		t.Fatal(err)
	}
	var fields map[string]int
	if err := json.Unmarshal(got[0].Raw, &fields); err != nil || fields["opens"] != 3 {
		t.Errorf("raw = %s (%v), want opens 3", got[0].Raw, err)
	}
}

// TestCreateRefShapes: CreateRef reads the new id from every answer shape
// decode accepts, a numeric string too, and an unreadable id is a
// DecodeError, as with Create.
func TestCreateRefShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       *Ref
	}{
		{"bare object", `{"id":41,"title":"t","body":"<p>b</p>","categories":[{"id":1}]}`, &Ref{ID: 41}},
		{"data object", `{"data":{"id":42,"self":"https://x.example/v3/content/42","title":"t"}}`, &Ref{ID: 42, Self: "https://x.example/v3/content/42"}},
		{"data array of one", `{"data":[{"id":43}],"total":1}`, &Ref{ID: 43}},
		{"envelope", `{"template":{"version":"3.0","data":[{"id":44,"title":"t"}]}}`, &Ref{ID: 44}},
		{"id as a string", `{"data":{"id":"45","title":"t"}}`, &Ref{ID: 45}},
		{"empty", ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) { reply(w, http.StatusCreated, tc.body) })
			c := newTestClient(t, rec)
			got, _, err := c.Stories.CreateRef(t.Context(), &StoryCreate{Title: Ptr("t")})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if reqs := rec.requests(); len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Path != "/v3/story" {
				t.Errorf("requests %+v, want one POST /v3/story", reqs)
			}
		})
	}
	t.Run("unreadable id", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			reply(w, http.StatusCreated, `{"data":{"id":"x"}}`)
		})
		_, _, err := newTestClient(t, rec).Links.CreateRef(t.Context(), &LinkCreate{Title: Ptr("t")})
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrUnreadable) {
			t.Errorf("err = %v, want a DecodeError matching ErrUnreadable", err)
		}
	})
	t.Run("nil request", func(t *testing.T) {
		t.Parallel()
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) { reply(w, http.StatusCreated, `{"id":1}`) })
		if _, _, err := newTestClient(t, rec).Needs.CreateRef(t.Context(), nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("err = %v, want ErrInvalid", err)
		}
		if n := rec.count(); n != 0 {
			t.Errorf("%d requests sent for a nil request, want 0", n)
		}
	})
}
