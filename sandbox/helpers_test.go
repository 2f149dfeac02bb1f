package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable clock for token expiry, rate limits and
// date_modified_utc.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newJSONLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fixture is a sandbox called in process through ServeHTTP, with a token.
type fixture struct {
	t     *testing.T
	srv   *Server
	clock *clock
	token string
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	c := newClock()
	if opts.Now == nil {
		opts.Now = c.Now
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f := &fixture{t: t, srv: srv, clock: c}
	f.token = f.newToken()
	return f
}

func (f *fixture) newToken() string {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, tokenPath, strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(f.srv.opts.ClientID, f.srv.opts.ClientSecret)
	res := f.send(req)
	if res.status != http.StatusOK {
		f.t.Fatalf("token: status %d, body %s", res.status, res.body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	res.decode(f.t, &tok)
	return tok.AccessToken
}

// response is a recorded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// obj decodes {"data": {...}}.
func (r response) obj(t *testing.T) map[string]any {
	t.Helper()
	var v struct {
		Data map[string]any `json:"data"`
	}
	r.decode(t, &v)
	return v.Data
}

// listBody is the list answer of the wire conventions.
type listBody struct {
	Data     []map[string]any `json:"data"`
	Page     int              `json:"page"`
	PageSize int              `json:"page_size"`
	Total    int              `json:"total"`
}

func (r response) list(t *testing.T) listBody {
	t.Helper()
	var l listBody
	r.decode(t, &l)
	if l.Data == nil {
		t.Fatalf("list answer without a data array: %s", r.body)
	}
	return l
}

// errorBody is the error answer of the wire conventions.
type errorBody struct {
	Error struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

func (r response) apiErr(t *testing.T) errorBody {
	t.Helper()
	var e errorBody
	r.decode(t, &e)
	if e.Error.Status != r.status || e.Error.Message == "" {
		t.Fatalf("error body %s does not match status %d", r.body, r.status)
	}
	return e
}

func (f *fixture) send(req *http.Request) response {
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// do sends an authorized request. body is nil, a string sent as is, or a
// value sent as JSON; bodies are sent as application/json.
func (f *fixture) do(method, path string, body any) response {
	f.t.Helper()
	return f.send(f.request(method, path, body))
}

func (f *fixture) request(method, path string, body any) *http.Request {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			f.t.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+f.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// must sends a request and fails the test unless the status is want.
func (f *fixture) must(want int, method, path string, body any) response {
	f.t.Helper()
	res := f.do(method, path, body)
	if res.status != want {
		f.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, res.status, want, res.body)
	}
	return res
}

// create POSTs obj in an envelope and returns the new id.
func (f *fixture) create(path string, obj map[string]any) int64 {
	f.t.Helper()
	return int64(f.must(http.StatusCreated, http.MethodPost, path, env(obj)).obj(f.t)["id"].(float64))
}

func env(objs ...map[string]any) map[string]any {
	data := make([]any, len(objs))
	for i, o := range objs {
		data[i] = o
	}
	return map[string]any{"template": map[string]any{"version": "3.0", "data": data}}
}

func subscriberBody(first, email string) map[string]any {
	return map[string]any{
		"first_name": first, "last_name": "Tester", "email": email,
		"subscriber_status": map[string]any{"id": 4}, "subscriber_privacy_level": map[string]any{"id": 1},
	}
}

func filterPath(path string, filter string) string {
	return path + "?filters_json=" + url.QueryEscape(filter)
}

// seed creates a small world and checks the ids it gets:
//
//	category 1 News, 2 Sports; segment 1 Staff (external_id seg-1);
//	subscriber 1 Ann (in segment 1), 2 Bob, 3 Cat (unsubscribed, code 6);
//	story 1 (category 1, segment 1), event 2, link 3, need 4; blast 1.
func (f *fixture) seed() {
	f.t.Helper()
	ids := []int64{
		f.create("/v3/category", map[string]any{"description": "News"}),
		f.create("/v3/category", map[string]any{"description": "Sports"}),
		f.create("/v3/segment", map[string]any{"description": "Staff", "external_id": "seg-1"}),
		f.create("/v3/subscriber", subscriberBody("Ann", "ann@example.com")),
		f.create("/v3/subscriber", subscriberBody("Bob", "bob@example.com")),
		f.create("/v3/subscriber", subscriberBody("Cat", "cat@example.com")),
		f.create("/v3/story", map[string]any{
			"title": "Story one", "external_id": "ext-1", "publish_date_utc": "2025-01-01 08:00:00",
			"categories": []any{map[string]any{"id": 1}}, "segments": []any{map[string]any{"id": 1}},
		}),
		f.create("/v3/event", map[string]any{"title": "Event two", "external_id": "ext-2", "event_city": "Lyon"}),
		f.create("/v3/link", map[string]any{"title": "Link three", "external_id": "ext-3", "external_url": "https://example.org/3"}),
		f.create("/v3/need", map[string]any{"title": "Need four", "need_quantity": 3, "publish_date_utc": "2025-01-04 08:00:00"}),
		f.create("/v3/blast", map[string]any{"name": "Welcome", "status": map[string]any{"id": 1}, "reply_to_email": "news@example.com"}),
	}
	want := []int64{1, 2, 1, 1, 2, 3, 1, 2, 3, 4, 1}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		f.t.Fatalf("seed ids %v, want %v", ids, want)
	}
	f.must(http.StatusOK, http.MethodPost, "/v3/segment/1/subscriber", env(map[string]any{"id": 1}))
	f.must(http.StatusOK, http.MethodPost, "/v3/subscriber/3/unsubscribe", env(map[string]any{
		"termination_date_utc": "2025-02-01 00:00:00", "termination_voluntary": true, "departure_code": map[string]any{"id": 6},
	}))
}

func ids(t *testing.T, items []map[string]any) []int64 {
	t.Helper()
	out := []int64{}
	for _, it := range items {
		id, ok := it["id"].(float64)
		if !ok {
			t.Fatalf("item without id: %v", it)
		}
		out = append(out, int64(id))
	}
	return out
}
