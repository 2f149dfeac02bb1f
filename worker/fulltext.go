package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedworker/feedworker/article"
	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/internal/netguard"
	"github.com/feedworker/feedworker/transform"
)

// fullTextConcurrency bounds the article pages one feed's poll fetches at
// once; the fetcher's per-host limit applies across feeds on top of it.
const fullTextConcurrency = 4

// NewArticleFetcher builds the full-text fetcher with the feed fetcher's
// limits (http section) and http.allow_networks. reg may be nil.
func NewArticleFetcher(h config.HTTP, reg prometheus.Registerer) (*article.Fetcher, error) {
	nets, err := netguard.ParsePrefixes(h.AllowNetworks)
	if err != nil {
		return nil, err
	}
	return article.NewFetcher(article.Options{
		UserAgent:      h.UserAgent,
		ConnectTimeout: h.ConnectTimeout.D(),
		Timeout:        h.Timeout.D(),
		MaxBytes:       int64(h.MaxBodySize),
		MaxRedirects:   h.MaxRedirects,
		PerHost:        h.PerHostConcurrency,
		AllowNetworks:  nets,
		Registerer:     reg,
	})
}

// FillFullText fetches the article page of every result that needs it
// (transform.Result.NeedsFullText), a few at a time, and resolves it. A
// failed fetch leaves the feed's text as the body, is logged at debug and
// counted by the fetcher's metric; it never holds the item back.
func FillFullText(ctx context.Context, f *article.Fetcher, log *slog.Logger, feedID, selector string, results []transform.Result) {
	sem := make(chan struct{}, fullTextConcurrency)
	var wg sync.WaitGroup
	for i := range results {
		r := &results[i]
		if !r.NeedsFullText {
			continue
		}
		if r.Payload == nil || r.Payload.ExternalURL == "" {
			r.ResolveFullText("", "")
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			page := r.Payload.ExternalURL
			art, err := f.Fetch(ctx, feedID, page, selector)
			if err != nil {
				cause := "unknown"
				var ae *article.Error
				if errors.As(err, &ae) {
					cause = ae.Cause
				}
				log.Debug("full text not fetched; the feed's text stays the body", "feed", feedID,
					"page", config.RedactURL(page), "cause", cause, "err", redactErr(err, page))
			}
			r.ResolveFullText(art.HTML, art.URL)
		}()
	}
	wg.Wait()
}
