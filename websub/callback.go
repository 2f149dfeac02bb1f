package websub

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/feedworker/feedworker/config"
)

// Handler serves the callbacks: GET for the hub's verification of intent,
// POST for content distribution. The feed id is the last path segment, so
// the listener may sit behind a proxy that keeps or strips a prefix.
func (s *Subscriber) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		feedID, err := url.PathUnescape(path.Base(r.URL.EscapedPath()))
		if err != nil || feedID == "" || feedID == "/" || feedID == "." || strings.HasPrefix(feedID, "_") {
			http.NotFound(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.verify(w, r, feedID)
		case http.MethodPost:
			s.deliver(w, r, feedID)
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// verify answers a hub's verification of intent (W3C WebSub 5.3) only for
// the topic and mode this feed asked for: a subscribe while the request is
// pending (or a renewal of an active one), an unsubscribe while one is
// asked. Anything else is a 404, which tells the hub no.
func (s *Subscriber) verify(w http.ResponseWriter, r *http.Request, feedID string) {
	ctx := r.Context()
	q := r.URL.Query()
	mode, topic, challenge := q.Get("hub.mode"), q.Get("hub.topic"), q.Get("hub.challenge")
	sub, err := s.load(ctx, feedID)
	if err != nil {
		s.log.Warn("websub: verification: reading the subscription failed", "feed", feedID, "err", err)
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	if sub == nil || topic != sub.Topic {
		s.m.verifications.WithLabelValues(mode, "refused").Inc()
		http.NotFound(w, r)
		return
	}
	switch mode {
	case "subscribe":
		lease, err := strconv.ParseInt(q.Get("hub.lease_seconds"), 10, 64)
		if challenge == "" || (sub.State != statePending && sub.State != stateActive) || err != nil || lease <= 0 {
			s.m.verifications.WithLabelValues(mode, "refused").Inc()
			http.NotFound(w, r)
			return
		}
		sub.State, sub.Lease, sub.Reason = stateActive, lease, ""
		sub.Expires = time.Now().Add(time.Duration(lease) * time.Second).Unix()
		if err := s.save(ctx, feedID, sub); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		s.log.Info("websub: subscription verified", "feed", feedID, "hub", config.RedactURL(sub.Hub), "lease_seconds", lease)
	case "unsubscribe":
		if challenge == "" || sub.State != stateUnsubscribing {
			s.m.verifications.WithLabelValues(mode, "refused").Inc()
			http.NotFound(w, r)
			return
		}
		if err := s.save(ctx, feedID, nil); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		s.log.Info("websub: unsubscribed", "feed", feedID, "hub", config.RedactURL(sub.Hub))
	case "denied":
		sub.State, sub.Reason = stateDenied, q.Get("hub.reason")
		if err := s.save(ctx, feedID, sub); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		s.log.Warn("websub: the hub denied the subscription; the feed is polled", "feed", feedID, "hub", config.RedactURL(sub.Hub), "reason", sub.Reason)
		s.m.verifications.WithLabelValues(mode, "ok").Inc()
		w.WriteHeader(http.StatusOK)
		return
	default:
		s.m.verifications.WithLabelValues("other", "refused").Inc()
		http.NotFound(w, r)
		return
	}
	s.m.verifications.WithLabelValues(mode, "ok").Inc()
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, challenge)
}

// deliver takes a content distribution (W3C WebSub 7, 8): the body must be
// signed with the subscription's secret. Unsigned and wrongly signed
// bodies are acknowledged with 202, as the spec asks, and dropped; a body
// that could not be handled answers 503, so that the hub tries again.
func (s *Subscriber) deliver(w http.ResponseWriter, r *http.Request, feedID string) {
	start := time.Now()
	ctx := r.Context()
	sub, err := s.load(ctx, feedID)
	if err != nil {
		s.m.deliveries.WithLabelValues("error").Inc()
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	if sub == nil || sub.State != stateActive && sub.State != statePending {
		// 410 tells the hub to stop (W3C WebSub 7).
		s.m.deliveries.WithLabelValues("unknown").Inc()
		http.Error(w, "no subscription", http.StatusGone)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.o.MaxBody+1))
	if err != nil {
		s.m.deliveries.WithLabelValues("error").Inc()
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	if int64(len(body)) > s.o.MaxBody {
		s.m.deliveries.WithLabelValues("too_large").Inc()
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	sig := r.Header.Get("X-Hub-Signature")
	switch {
	case sig == "":
		s.m.deliveries.WithLabelValues("unsigned").Inc()
		s.log.Warn("websub: unsigned delivery dropped", "feed", feedID)
		w.WriteHeader(http.StatusAccepted)
		return
	case !signed(sub.Secret, sig, body):
		s.m.deliveries.WithLabelValues("bad_signature").Inc()
		s.log.Warn("websub: delivery with a wrong signature dropped", "feed", feedID)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// The hub's request may be cut short; the content, once read, is
	// handled to the end.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := s.o.Deliver(hctx, feedID, body, r.Header.Get("Content-Type")); err != nil {
		s.m.deliveries.WithLabelValues("error").Inc()
		s.log.Warn("websub: delivery not handled; the hub will send it again", "feed", feedID, "err", err)
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	s.m.deliveries.WithLabelValues("ok").Inc()
	s.m.accept.Observe(time.Since(start).Seconds())
	w.WriteHeader(http.StatusNoContent)
}

// signed checks an X-Hub-Signature "sha256=<hex>" against body. Only
// sha256 is taken: the spec's sha1 is broken, and the issue asks for
// HMAC-SHA256.
func signed(secretHex, header string, body []byte) bool {
	algo, sum, ok := strings.Cut(strings.TrimSpace(header), "=")
	if !ok || !strings.EqualFold(algo, "sha256") {
		return false
	}
	want, err := hex.DecodeString(sum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secretHex))
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), want)
}
