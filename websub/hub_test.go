package websub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testHub is the subscriber-facing half of a W3C WebSub hub: it takes
// subscription requests, verifies the subscriber's intent at its callback
// (with a random challenge, which must come back), and distributes
// content signed with the subscription's secret.
type testHub struct {
	t     *testing.T
	srv   *httptest.Server
	grant int64 // lease_seconds granted; 0 grants what was asked

	mu       sync.Mutex
	requests []hubRequest
	subs     map[string]*hubSub // by callback
}

type hubRequest struct {
	Mode, Topic, Callback, Secret string
	Lease                         int64
}

type hubSub struct {
	topic, secret string
	verified      int // successful verifications
	refused       int // verifications the subscriber did not confirm
	active        bool
}

func newTestHub(t *testing.T) *testHub {
	h := &testHub{t: t, subs: map[string]*hubSub{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *testHub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	lease, _ := strconv.ParseInt(r.PostForm.Get("hub.lease_seconds"), 10, 64)
	req := hubRequest{Mode: r.PostForm.Get("hub.mode"), Topic: r.PostForm.Get("hub.topic"),
		Callback: r.PostForm.Get("hub.callback"), Secret: r.PostForm.Get("hub.secret"), Lease: lease}
	if req.Callback == "" || req.Topic == "" || (req.Mode != "subscribe" && req.Mode != "unsubscribe") {
		http.Error(w, "missing hub.callback, hub.topic or hub.mode", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.requests = append(h.requests, req)
	h.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	// Verification of intent comes after the 202, as hubs do it.
	go h.verify(req)
}

func (h *testHub) verify(req hubRequest) {
	challenge := fmt.Sprintf("challenge-%d", time.Now().UnixNano())
	granted := req.Lease
	if h.grant > 0 {
		granted = h.grant
	}
	q := url.Values{"hub.mode": {req.Mode}, "hub.topic": {req.Topic}, "hub.challenge": {challenge}}
	if req.Mode == "subscribe" {
		q.Set("hub.lease_seconds", strconv.FormatInt(granted, 10))
	}
	resp, err := http.Get(req.Callback + "?" + q.Encode())
	ok := false
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ok = resp.StatusCode/100 == 2 && string(body) == challenge
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.subs[req.Callback]
	if s == nil {
		s = &hubSub{}
		h.subs[req.Callback] = s
	}
	if !ok {
		s.refused++
		return
	}
	s.verified++
	s.topic, s.secret, s.active = req.Topic, req.Secret, req.Mode == "subscribe"
}

// sub returns a copy of the hub's subscription at callback.
func (h *testHub) sub(callback string) hubSub {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.subs[callback]; s != nil {
		return *s
	}
	return hubSub{}
}

func (h *testHub) requestsOf(mode string) []hubRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hubRequest
	for _, r := range h.requests {
		if r.Mode == mode {
			out = append(out, r)
		}
	}
	return out
}

// push distributes body to callback, signed with secret ("" sends no
// signature), and returns the status.
func (h *testHub) push(callback, secret, body string) int {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, callback, bytes.NewReader([]byte(body)))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/atom+xml")
	if secret != "" {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req.Header.Set("X-Hub-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
