package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkCreate posts stories through the in-process Transport to a
// sandbox with a data file, as the worker's embedded default does (the
// quickstart's 100,000-item import is this, 100,000 times), from
// 32 goroutines per CPU so that writes share journal syncs.
//
//	go test -run '^$' -bench Create -benchmem ./sandbox/
func BenchmarkCreate(b *testing.B) {
	s, err := New(Options{DataFile: filepath.Join(b.TempDir(), "s.json")})
	if err != nil {
		b.Fatal(err)
	}
	rt := s.Transport()
	form := url.Values{"grant_type": {"client_credentials"}}.Encode()
	treq, _ := http.NewRequest(http.MethodPost, "http://sandbox"+tokenPath, strings.NewReader(form))
	treq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	treq.SetBasicAuth(s.opts.ClientID, s.opts.ClientSecret)
	tres, err := rt.RoundTrip(treq)
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(tres.Body).Decode(&tok); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.SetParallelism(32) // as many as the embedded default's 64 senders
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			n++
			body, _ := json.Marshal(map[string]any{"template": map[string]any{"version": "3.0", "data": []any{map[string]any{
				"title": fmt.Sprintf("Story %d %p", n, &n), "external_id": fmt.Sprintf("e-%d-%p", n, &n),
				"summary":          "A summary of the story, a sentence or two.",
				"body":             `<p><img src="https://farm.example/img/1.jpg" width="640" height="360" alt="illustration"></p><p>Some text <a href="https://farm.example/ref">a link</a> more text.</p>`,
				"publish_date_utc": "2026-01-02 03:04:05",
			}}}})
			req, _ := http.NewRequest(http.MethodPost, "http://sandbox/v3/story", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			req.Header.Set("Content-Type", "application/json")
			res, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			if res.StatusCode != http.StatusCreated {
				b.Fatalf("status %d", res.StatusCode)
			}
		}
	})
}
