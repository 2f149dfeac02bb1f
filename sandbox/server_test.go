package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	srv, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Find a free port, then serve on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, addr) }()
	var token string
	for deadline := time.Now().Add(5 * time.Second); ; {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	token = fetchToken(t, "http://"+addr)
	if status, b := call(t, "GET", "http://"+addr+"/v3/content", token, nil); status != 200 {
		t.Fatalf("GET: %d %s", status, b)
	}
	// A request held by injected latency does not hold the shutdown.
	if err := srv.SetFaults(Faults{Latency: time.Hour}); err != nil {
		t.Fatal(err)
	}
	go func() {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			fmt.Fprintf(conn, "GET /v3/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token)
			time.Sleep(2 * time.Second)
			conn.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("ListenAndServe did not return after cancel")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if err := srv.ListenAndServe(t.Context(), "256.0.0.1:1"); err == nil {
		t.Error("ListenAndServe on a bad address returned nil")
	}
}

// TestConcurrentWrites posts from several goroutines over the network; run
// with -race, it also checks the locking.
func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	r := serve(t, Options{DataFile: t.TempDir() + "/s.json"})
	defer r.stop()
	token := fetchToken(t, r.base)
	const workers, each = 6, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				body := env(map[string]any{"title": "t", "external_id": fmt.Sprintf("w%d-%d", w, i)})
				if status, b := call(t, "POST", r.base+"/v3/link", token, body); status != 201 {
					t.Errorf("POST: %d %s", status, b)
					return
				}
				if status, _ := call(t, "GET", r.base+"/v3/content?page_size=5", token, nil); status != 200 {
					t.Errorf("GET: %d", status)
					return
				}
			}
		})
	}
	wg.Wait()
	items := r.srv.AllContent()
	if len(items) != workers*each {
		t.Fatalf("%d items, want %d", len(items), workers*each)
	}
	for i, it := range items {
		if it.ID != int64(i+1) {
			t.Fatalf("item %d has id %d: ids must be 1..%d without gaps", i, it.ID, len(items))
		}
	}
	reloaded, err := New(Options{DataFile: r.srv.opts.DataFile})
	if err != nil {
		t.Fatal(err)
	}
	if got := reloaded.Counts()["link"]; got != workers*each {
		t.Errorf("data file holds %d links", got)
	}
}

// TestGoAPI covers the accessors tests use.
func TestGoAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{RequestLogSize: 4})
	f.seed()
	f.clock.Advance(time.Minute)
	f.create("/v3/link", map[string]any{"title": "Again", "external_id": "ext-1"})

	got := f.srv.ItemsByExternalID("ext-1")
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 5 || got[0].Type != "story" || got[1].Type != "link" {
		t.Fatalf("ItemsByExternalID: %+v", got)
	}
	if got[1].Title != "Again" || got[1].ExternalID != "ext-1" || got[1].DateModifiedUTC != "2025-03-01 12:01:00" {
		t.Errorf("item %+v", got[1])
	}
	var j map[string]any
	if err := json.Unmarshal(got[0].JSON, &j); err != nil {
		t.Fatal(err)
	}
	if j["self"] != "/v3/content/1" || j["type"] != "story" || j["title"] != "Story one" {
		t.Errorf("item JSON %s", got[0].JSON)
	}
	if n := len(f.srv.ItemsByExternalID("nope")); n != 0 {
		t.Errorf("%d items for an unknown external_id", n)
	}
	want := map[string]int{"story": 1, "event": 1, "link": 2, "need": 1, "subscriber": 2, "unsubscribe": 1, "segment": 1, "category": 2, "blast": 1}
	if d := cmp.Diff(want, f.srv.Counts()); d != "" {
		t.Errorf("Counts (-want +got):\n%s", d)
	}
	var types []string
	for _, it := range f.srv.AllContent() {
		types = append(types, it.Type)
	}
	if !slices.Equal(types, []string{"story", "event", "link", "need", "link"}) {
		t.Errorf("AllContent types %v", types)
	}

	f.do("GET", "/v3/content/1", nil)
	f.do("DELETE", "/v3/content/1", nil)
	f.do("GET", "/v3/nothing", nil)
	reqs := f.srv.Requests()
	wantReqs := []Request{
		{Method: "POST", Path: "/v3/link", Status: 201},
		{Method: "GET", Path: "/v3/content/1", Status: 200},
		{Method: "DELETE", Path: "/v3/content/1", Status: 405},
		{Method: "GET", Path: "/v3/nothing", Status: 404},
	}
	if d := cmp.Diff(wantReqs, reqs); d != "" {
		t.Errorf("request log, bounded to 4 (-want +got):\n%s", d)
	}

	if err := f.srv.Reset(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.srv.AllContent()) + len(f.srv.Requests()); n != 0 {
		t.Errorf("%d items and requests after Reset", n)
	}
	if id := f.create("/v3/story", map[string]any{"title": "fresh"}); id != 1 {
		t.Errorf("first id after Reset %d, want 1", id)
	}
}

// TestRequestLogOrder checks that an entry is logged before its answer can
// be read, in arrival order, with query strings left out.
func TestRequestLogOrder(t *testing.T) {
	t.Parallel()
	r := serve(t, Options{})
	defer r.stop()
	token := fetchToken(t, r.base)
	for i := range 5 {
		call(t, "GET", fmt.Sprintf("%s/v3/content?page=%d", r.base, i+1), token, nil)
		reqs := r.srv.Requests()
		if len(reqs) != i+2 {
			t.Fatalf("after %d calls the log has %d entries", i+2, len(reqs))
		}
		if last := reqs[len(reqs)-1]; last.Path != "/v3/content" || strings.Contains(last.Path, "?") {
			t.Errorf("entry %+v", last)
		}
	}
	if first := r.srv.Requests()[0]; first.Path != tokenPath || first.Status != 200 {
		t.Errorf("first entry %+v", first)
	}
}

// TestStopIsPromptWithAnUnusedConnection: a connection that never sends a
// request (a client transport may dial one and not use it) must not hold
// the shutdown; net/http alone would wait 5 s for it.
func TestStopIsPromptWithAnUnusedConnection(t *testing.T) {
	t.Parallel()
	r := serve(t, Options{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(50 * time.Millisecond) // let the server accept it
	start := time.Now()
	r.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop took %s with an unused connection open", d)
	}
}
