// Package websubhub is the subscriber-facing half of a W3C WebSub hub, for
// tests: it takes subscription requests, verifies the subscriber's intent
// at its callback with a random challenge that must come back, and
// distributes content signed with each subscription's secret.
package websubhub

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

// Hub is a running test hub.
type Hub struct {
	t *testing.T
	// URL is the hub's address, what feeds name in rel="hub".
	URL string
	srv *httptest.Server
	// Grant is the lease_seconds the hub grants; 0 grants what was asked.
	// Set it before the first subscription.
	Grant int64

	mu       sync.Mutex
	requests []Request
	subs     map[string]*Sub // by callback
}

// Request is a subscription request the hub received.
type Request struct {
	Mode, Topic, Callback, Secret string
	Lease                         int64
}

// Sub is the hub's view of one callback's subscription.
type Sub struct {
	Topic, Secret string
	Verified      int // successful verifications of intent
	Refused       int // verifications the subscriber did not confirm
	Active        bool
}

// New starts a hub, stopped when the test ends.
func New(t *testing.T) *Hub {
	h := &Hub{t: t, subs: map[string]*Sub{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	h.URL = h.srv.URL
	t.Cleanup(h.srv.Close)
	return h
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	lease, _ := strconv.ParseInt(r.PostForm.Get("hub.lease_seconds"), 10, 64)
	req := Request{Mode: r.PostForm.Get("hub.mode"), Topic: r.PostForm.Get("hub.topic"),
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

func (h *Hub) verify(req Request) {
	challenge := fmt.Sprintf("challenge-%d", time.Now().UnixNano())
	granted := req.Lease
	if h.Grant > 0 {
		granted = h.Grant
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
		s = &Sub{}
		h.subs[req.Callback] = s
	}
	if !ok {
		s.Refused++
		return
	}
	s.Verified++
	s.Topic, s.Active = req.Topic, req.Mode == "subscribe"
	if s.Active {
		s.Secret = req.Secret
	}
}

// Sub returns a copy of the hub's subscription at callback.
func (h *Hub) Sub(callback string) Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.subs[callback]; s != nil {
		return *s
	}
	return Sub{}
}

// Requests returns the requests of a mode (subscribe, unsubscribe) so far.
func (h *Hub) Requests(mode string) []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Request
	for _, r := range h.requests {
		if r.Mode == mode {
			out = append(out, r)
		}
	}
	return out
}

// Push distributes body to callback, signed with secret ("" sends no
// signature), and returns the status the subscriber answered.
func (h *Hub) Push(callback, secret, body string) int {
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

// WaitFor polls cond until it holds, or fails the test after a generous
// deadline: tests wait for conditions, never for a time.
func WaitFor(t *testing.T, what string, cond func() bool) {
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
