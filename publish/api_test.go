package publish_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
