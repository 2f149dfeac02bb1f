package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/feedworker/feedworker/internal/syncbuf"
)

// running is a sandbox served on a real listener.
type running struct {
	srv  *Server
	base string
	stop func()
}

func serve(t *testing.T, opts Options) running {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	}
	return running{srv: srv, base: "http://" + ln.Addr().String(), stop: stop}
}

// call sends a request over the network.
func call(t *testing.T, method, u, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

func fetchToken(t *testing.T, base string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {DefaultClientID}, "client_secret": {DefaultClientSecret}}
	res, err := http.Post(base+tokenPath, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %v", err)
	}
	return tok.AccessToken
}

// TestRestartKeepsContent stops a sandbox with a data file and starts a new
// one on the same file.
func TestRestartKeepsContent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "sandbox.json")
	first := serve(t, Options{DataFile: file})
	token := fetchToken(t, first.base)
	writes := []struct {
		method, path string
		body         map[string]any
		want         int
	}{
		{"POST", "/v3/category", map[string]any{"description": "News"}, 201},
		{"POST", "/v3/segment", map[string]any{"description": "Staff", "external_id": "seg-1"}, 201},
		{"POST", "/v3/subscriber", subscriberBody("Ann", "ann@example.com"), 201},
		{"POST", "/v3/subscriber", subscriberBody("Bob", "bob@example.com"), 201},
		{"POST", "/v3/segment/1/subscriber", map[string]any{"id": 1}, 200},
		{"POST", "/v3/subscriber/2/unsubscribe", map[string]any{"departure_code": map[string]any{"id": 6}}, 200},
		{"POST", "/v3/story", map[string]any{"title": "Story", "external_id": "s-1", "categories": []any{map[string]any{"id": 1}}, "private": true}, 201},
		{"POST", "/v3/event", map[string]any{"title": "Event", "event_start_date_time_utc": "2025-05-01 09:00:00", "event_time_zone": map[string]any{"id": 3}}, 201},
		{"POST", "/v3/link", map[string]any{"title": "Link", "external_url": "https://example.org"}, 201},
		{"POST", "/v3/need", map[string]any{"title": "Need", "need_quantity": 4}, 201},
		{"POST", "/v3/need", map[string]any{"title": "Gone"}, 201},
		{"DELETE", "/v3/need/5", nil, 204},
		{"PUT", "/v3/link/3", map[string]any{"id": 3, "summary": "updated"}, 200},
		{"POST", "/v3/blast", map[string]any{"name": "B", "blast_merge_fields": []any{map[string]any{"id": 1, "type": map[string]any{"id": 1}, "value": "v"}}}, 201},
	}
	for _, w := range writes {
		var body any
		if w.body != nil {
			body = env(w.body)
		}
		if status, b := call(t, w.method, first.base+w.path, token, body); status != w.want {
			t.Fatalf("%s %s: %d %s", w.method, w.path, status, b)
		}
	}
	wantItems, wantCounts := first.srv.AllContent(), first.srv.Counts()
	_, wantList := call(t, "GET", first.base+"/v3/content", token, nil)
	_, wantSub := call(t, "GET", first.base+"/v3/subscriber/1", token, nil)
	first.stop()

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), token) {
		t.Error("the data file holds the access token")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the data file (no temporary files)", len(entries))
	}

	second := serve(t, Options{DataFile: file})
	defer second.stop()
	if d := cmp.Diff(wantItems, second.srv.AllContent()); d != "" {
		t.Errorf("content after restart (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantCounts, second.srv.Counts()); d != "" {
		t.Errorf("counts after restart (-want +got):\n%s", d)
	}
	// The token issued before the restart is still good, and the answers
	// are the same except for the port in self links.
	status, gotList := call(t, "GET", second.base+"/v3/content", token, nil)
	if status != 200 {
		t.Fatalf("list after restart: %d %s", status, gotList)
	}
	fix := func(b []byte, base string) string { return strings.ReplaceAll(string(b), base, "BASE") }
	if d := cmp.Diff(fix(wantList, first.base), fix(gotList, second.base)); d != "" {
		t.Errorf("list after restart (-want +got):\n%s", d)
	}
	if _, gotSub := call(t, "GET", second.base+"/v3/subscriber/1", token, nil); fix(gotSub, second.base) != fix(wantSub, first.base) {
		t.Errorf("subscriber after restart %s, want %s", gotSub, wantSub)
	}
	if status, _ := call(t, "GET", second.base+"/v3/unsubscribe/2", token, nil); status != 200 {
		t.Errorf("unsubscribe after restart: %d", status)
	}
	// Ids continue where they stopped: 5 was deleted and is not reused.
	status, b := call(t, "POST", second.base+"/v3/story", token, env(map[string]any{"title": "After"}))
	if status != 201 || !strings.Contains(string(b), `"id":6`) {
		t.Errorf("create after restart: %d %s, want id 6", status, b)
	}
	if status, _ := call(t, "POST", second.base+"/v3/subscriber", token, env(subscriberBody("Cy", "cy@example.com"))); status != 201 {
		t.Errorf("subscriber after restart: %d", status)
	}
	if got := second.srv.Counts()["subscriber"]; got != 2 {
		t.Errorf("%d subscribers", got)
	}
}

func TestDataFile(t *testing.T) {
	t.Parallel()
	t.Run("created at start", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "s.json")
		if _, err := New(Options{DataFile: file}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(file); err != nil {
			t.Errorf("data file not created: %v", err)
		}
	})
	t.Run("unwritable directory fails at start", func(t *testing.T) {
		t.Parallel()
		if _, err := New(Options{DataFile: filepath.Join(t.TempDir(), "missing", "s.json")}); err == nil {
			t.Error("New accepted a data file in a missing directory")
		}
	})
	t.Run("reset is saved", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "s.json")
		f := newFixture(t, Options{DataFile: file})
		f.seed()
		if err := f.srv.Reset(); err != nil {
			t.Fatal(err)
		}
		srv, err := New(Options{DataFile: file})
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range srv.Counts() {
			if n != 0 {
				t.Errorf("%d %s after reset and reload", n, k)
			}
		}
	})
	t.Run("failed save is a 500 and keeps the change in memory", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "sub")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		var logs syncbuf.Buffer
		f := newFixture(t, Options{DataFile: filepath.Join(dir, "s.json"), Logger: newJSONLogger(&logs)})
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		f.must(500, "POST", "/v3/category", env(map[string]any{"description": "x"})).apiErr(t)
		if n := f.srv.Counts()["category"]; n != 1 {
			t.Errorf("%d categories in memory", n)
		}
		if !strings.Contains(logs.String(), "save state") {
			t.Errorf("save error not logged: %s", logs.String())
		}
	})
}

// TestDataFileRefused checks that a data file that does not decode is
// refused, and left as it was.
func TestDataFileRefused(t *testing.T) {
	t.Parallel()
	valid := func(mutate func(m map[string]any)) string {
		m := map[string]any{
			"format":  1,
			"next_id": map[string]any{"content": 3, "subscriber": 1, "segment": 1, "category": 1, "blast": 1},
			"records": map[string]any{
				"content": []any{map[string]any{"id": 1, "type": "story", "date_modified_utc": "2025-01-01 00:00:00", "fields": map[string]any{"title": "t"}}},
			},
			"tokens": []any{},
		}
		mutate(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	content := func(m map[string]any) map[string]any {
		return m["records"].(map[string]any)["content"].([]any)[0].(map[string]any)
	}
	tests := []struct {
		name string
		body string
	}{
		{"not JSON", "{"},
		{"format 2", valid(func(m map[string]any) { m["format"] = 2 })},
		{"no next_id", valid(func(m map[string]any) { delete(m, "next_id") })},
		{"unknown collection", valid(func(m map[string]any) { m["records"].(map[string]any)["widgets"] = []any{} })},
		{"id beyond next_id", valid(func(m map[string]any) { content(m)["id"] = 3 })},
		{"unknown type", valid(func(m map[string]any) { content(m)["type"] = "video" })},
		{"unknown field", valid(func(m map[string]any) { content(m)["fields"] = map[string]any{"colour": "red"} })},
		{"wrong field type", valid(func(m map[string]any) { content(m)["fields"] = map[string]any{"title": 5} })},
		{"bad timestamp", valid(func(m map[string]any) { content(m)["date_modified_utc"] = "yesterday" })},
		{"duplicate id", valid(func(m map[string]any) {
			m["records"].(map[string]any)["content"] = append(m["records"].(map[string]any)["content"].([]any), content(m))
		})},
	}
	if _, err := decodeState([]byte(valid(func(map[string]any) {})), newSchemas(DefaultReplyToDomain), time.Now()); err != nil {
		t.Fatalf("the valid base is refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.json")
			if err := os.WriteFile(file, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := New(Options{DataFile: file})
			if err == nil || !strings.Contains(err.Error(), file) {
				t.Fatalf("New: %v, want an error naming the file", err)
			}
			if b, _ := os.ReadFile(file); string(b) != tt.body {
				t.Error("the refused file was changed")
			}
		})
	}
}
