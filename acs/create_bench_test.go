package acs

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/feedworker/feedworker/internal/cputime"
)

// BenchmarkCreateRef is one Story create as a worker sends it: an HTML body
// of about 1.5 KB, a bearer token, over loopback to a server that reads the
// request and answers the whole item (about 2.9 KB, as the sandbox does).
// The server's share is in the figures too, the same for any client.
//
//	go test -run '^$' -bench CreateRef -benchmem ./acs/
func BenchmarkCreateRef(b *testing.B) {
	body := strings.Repeat(`<p>Lorem ipsum dolor <a href="https://example.com/x">sit</a> amet, consectetur adipiscing.</p>`, 16)
	answer, err := json.Marshal(map[string]any{"data": map[string]any{
		"id": 12345, "type": "story", "title": "Item 3 of feed 9: alpha beta gamma delta",
		"external_id": "farm-9/fw1-8a55a60c210597345e3c", "body": body, "summary": "alpha beta gamma delta river",
		"publish_date_utc": "2026-01-01 00:00:00", "date_modified_utc": "2026-01-01 00:00:00",
		"category_ids": []int{1, 2}, "self": "http://127.0.0.1:8089/v3/content/12345",
	}})
	if err != nil {
		b.Fatal(err)
	}
	pub := NewTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	req := &StoryCreate{
		Title: Ptr("Item 3 of feed 9: alpha beta gamma delta"), Summary: Ptr("alpha beta gamma delta river"),
		Body: Ptr(body), ExternalID: Ptr("farm-9/fw1-8a55a60c210597345e3c"), PublishDateUTC: &pub,
		Categories: []Ref{{ID: 1}, {ID: 2}},
	}
	run := func(b *testing.B, c *Client) {
		// A deadline, as the worker's sends have (publish's SendTimeout).
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		b.ReportAllocs()
		n, cpu0 := 0, cputime.Self()
		for b.Loop() {
			n++
			ref, _, err := c.Stories.CreateRef(ctx, req)
			if err != nil || ref == nil || ref.ID != 12345 {
				b.Fatalf("CreateRef = %+v, %v", ref, err)
			}
		}
		// CPU time (GC included) is steadier than wall time on a shared
		// machine.
		b.ReportMetric(float64(cputime.Self()-cpu0)/float64(n), "cpu-ns/op")
	}
	b.Run("loopback", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(answer)
		}))
		b.Cleanup(srv.Close)
		c, err := NewClient(srv.URL, StaticToken("bench-token").HTTPClient(nil), WithUserAgent("feedworker-bench"))
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
	// The client's own work: a transport that answers at once, in process.
	b.Run("client", func(b *testing.B) {
		c, err := NewClient("http://127.0.0.1:8089", StaticToken("bench-token").HTTPClient(answerTransport(answer)), WithUserAgent("feedworker-bench"))
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})

	// As the worker's client is: client credentials (a token fetched
	// once), a 30s http.Client Timeout.
	b.Run("client-oauth", func(b *testing.B) {
		cc := ClientCredentials{TokenURL: "http://127.0.0.1:8089/oauth/token", ClientID: "id", ClientSecret: "secret"}
		hc := cc.HTTPClient(tokenAnswerTransport{answerTransport(answer)})
		hc.Timeout = 30 * time.Second
		c, err := NewClient("http://127.0.0.1:8089", hc, WithUserAgent("feedworker-bench"))
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
}

// tokenAnswerTransport answers the token endpoint with a token good for an
// hour, and everything else as next does.
type tokenAnswerTransport struct{ next http.RoundTripper }

func (t tokenAnswerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/oauth/token" {
		return t.next.RoundTrip(r)
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	tok := `{"access_token":"bench-token","token_type":"bearer","expires_in":3600}`
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(tok)), ContentLength: int64(len(tok)), Request: r}, nil
}

// answerTransport answers every request 201 with body, having read the
// request's body.
type answerTransport []byte

func (a answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a)), ContentLength: int64(len(a)), Request: r}, nil
}
