package sandbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestMountKeepsThePrefixInSelfLinks mounts the sandbox under /sandbox on
// another mux, as the worker's admin server does: the self links it
// answers keep the prefix and lead back through the mount.
func TestMountKeepsThePrefixInSelfLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	mux := http.NewServeMux()
	mux.Handle("/sandbox/", f.srv.Mount("/sandbox"))
	via := func(req *http.Request) response {
		req.URL.Path = "/sandbox" + req.URL.Path
		req.RequestURI = ""
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	}
	cat := f.create("/v3/category", map[string]any{"description": "News"})
	created := via(f.request(http.MethodPost, "/v3/story", env(map[string]any{
		"title": "Hello", "categories": []map[string]any{{"id": cat}},
	})))
	if created.status != http.StatusCreated {
		t.Fatalf("POST through the mount: %d %s", created.status, created.body)
	}
	id := int64(created.obj(t)["id"].(float64))

	got := via(f.request(http.MethodGet, fmt.Sprintf("/v3/content/%d", id), nil)).obj(t)
	if want := fmt.Sprintf("http://example.com/sandbox/v3/content/%d", id); got["self"] != want {
		t.Errorf("self through the mount = %v, want %s", got["self"], want)
	}
	cats, _ := got["categories"].([]any)
	if len(cats) != 1 || cats[0].(map[string]any)["self"] != fmt.Sprintf("http://example.com/sandbox/v3/category/%d", cat) {
		t.Errorf("category ref through the mount = %v", got["categories"])
	}
	// Served directly, the same record has no prefix.
	direct := f.must(http.StatusOK, http.MethodGet, fmt.Sprintf("/v3/content/%d", id), nil).obj(t)
	if want := fmt.Sprintf("http://example.com/v3/content/%d", id); direct["self"] != want {
		t.Errorf("self served directly = %v, want %s", direct["self"], want)
	}
}
