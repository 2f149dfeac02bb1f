package sandbox

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestDeleteEventStrict: DELETE /v3/event/{id} removes the event once; a
// second DELETE, a DELETE through another type's path, an unknown id and
// an unauthorized DELETE are refused, and leave the content as it was.
func TestDeleteEventStrict(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ev := f.create("/v3/event", map[string]any{"title": "Concert", "external_id": "fw1-x", "event_start_date_time_utc": "2026-03-05 19:00:00"})
	story := f.create("/v3/story", map[string]any{"title": "News"})
	evPath := "/v3/event/" + strconv.FormatInt(ev, 10)

	// Through the story path: 404, and the event stays.
	res := f.must(http.StatusNotFound, http.MethodDelete, "/v3/story/"+strconv.FormatInt(ev, 10), nil)
	if !strings.Contains(string(res.body), "is a event") {
		t.Errorf("wrong-type DELETE body %s, want it to say the content is an event", res.body)
	}
	f.must(http.StatusNotFound, http.MethodDelete, "/v3/event/"+strconv.FormatInt(story, 10), nil)
	f.must(http.StatusOK, http.MethodGet, "/v3/content/"+strconv.FormatInt(ev, 10), nil)

	// Without a token: 401, nothing deleted.
	req := f.request(http.MethodDelete, evPath, nil)
	req.Header.Del("Authorization")
	if res := f.send(req); res.status != http.StatusUnauthorized {
		t.Errorf("DELETE without token: %d, want 401", res.status)
	}
	f.must(http.StatusOK, http.MethodGet, "/v3/content/"+strconv.FormatInt(ev, 10), nil)

	// The real DELETE: 204 with no body, then the event is gone.
	res = f.must(http.StatusNoContent, http.MethodDelete, evPath, nil)
	if len(res.body) != 0 {
		t.Errorf("204 with body %q", res.body)
	}
	f.must(http.StatusNotFound, http.MethodGet, "/v3/content/"+strconv.FormatInt(ev, 10), nil)
	// Again: 404 with an error body, as a client that retries sees it.
	res = f.must(http.StatusNotFound, http.MethodDelete, evPath, nil)
	if !strings.Contains(string(res.body), `"status":404`) {
		t.Errorf("second DELETE body %s, want the error object", res.body)
	}
	f.must(http.StatusNotFound, http.MethodDelete, "/v3/event/999", nil)
	f.must(http.StatusOK, http.MethodGet, "/v3/content/"+strconv.FormatInt(story, 10), nil)
	if n := f.srv.Counts()["event"]; n != 0 {
		t.Errorf("%d events left, want 0", n)
	}
}
