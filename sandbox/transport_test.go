package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransport: through the in-process transport a client gets a token,
// creates and reads content with self links on the URL's host, is refused
// without a token, and what it wrote is in the data file.
func TestTransport(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "s.json")
	srv, err := New(Options{DataFile: file})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: srv.Transport()}
	const base = "http://sandbox.test"

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {DefaultClientID}, "client_secret": {DefaultClientSecret}}
	res, err := c.Post(base+tokenPath, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: status %d, %v", res.StatusCode, err)
	}
	_ = res.Body.Close()

	id, err := postStory(t.Context(), c, base, tok.AccessToken, "in-process")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/v3/content/%d", base, id), nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	var got struct {
		Data struct {
			ID         int64  `json:"id"`
			Self       string `json:"self"`
			ExternalID string `json:"external_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &got); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d, %v: %s", res.StatusCode, err, b)
	}
	if got.Data.ID != id || got.Data.ExternalID != "in-process" || !strings.HasPrefix(got.Data.Self, base+"/v3/") {
		t.Errorf("GET answered %+v, want id %d, external_id in-process, self under %s", got.Data, id, base)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if res.ContentLength != int64(len(b)) {
		t.Errorf("ContentLength %d, body %d bytes", res.ContentLength, len(b))
	}

	if _, err := postStory(t.Context(), c, base, "not-a-token", "refused"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("POST with a wrong token: %v, want status 401", err)
	}

	again, err := New(Options{DataFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if items := again.ItemsByExternalID("in-process"); len(items) != 1 {
		t.Errorf("after a reload the data file holds %d items with the external id, want 1", len(items))
	}
}

// closeTracker is a request body that says whether it was closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// TestTransportContext: a request whose context ends returns the context's
// error, without waiting for the handler (here held by an hour of injected
// latency, which then answers 503 on its own), and its body is closed.
func TestTransportContext(t *testing.T) {
	t.Parallel()
	// The clock says when the handler has started: the fault decision
	// reads it first.
	var armed atomic.Bool
	var once sync.Once
	entered := make(chan struct{})
	now := func() time.Time {
		if armed.Load() {
			once.Do(func() { close(entered) })
		}
		return time.Now()
	}
	srv, err := New(Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetFaults(Faults{Latency: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	body := &closeTracker{Reader: strings.NewReader(`{}`)}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://sandbox.test/v3/story", body)
	errc := make(chan error, 1)
	armed.Store(true)
	go func() {
		res, err := srv.Transport().RoundTrip(req)
		if res != nil {
			_ = res.Body.Close()
		}
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("RoundTrip: %v, want context.Canceled", err)
	}
	if !body.closed {
		t.Error("the request body was not closed")
	}

	// The held handler sees the end too and answers 503 on its own.
	for len(srv.Requests()) == 0 {
		select {
		case <-t.Context().Done():
			t.Fatal("the held request was never logged")
		case <-time.After(time.Millisecond):
		}
	}
	if r := srv.Requests()[0]; r.Status != http.StatusServiceUnavailable {
		t.Errorf("the held request was answered %d, want 503", r.Status)
	}

	// An already ended context sends nothing.
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://sandbox.test/v3/content", nil)
	if _, err := srv.Transport().RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("RoundTrip with an ended context: %v, want context.Canceled", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests logged, want 1: one with an ended context was handled", n)
	}
}
