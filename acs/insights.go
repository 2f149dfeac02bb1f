package acs

import (
	"context"
	"iter"
)

// InsightsService handles the engagement reports (spec 4.7). Their records'
// fields are not shown by the spec; each [Insight] keeps its raw JSON.
type InsightsService service

// ListContent returns one page of /v3/content_insights: engagement per
// piece of Content.
func (s *InsightsService) ListContent(ctx context.Context, opts *ListOptions) ([]*Insight, *Response, error) {
	return list[Insight](ctx, s.client, "/v3/content_insights", TypeContentInsights, opts)
}

// AllContent iterates over every page of /v3/content_insights.
func (s *InsightsService) AllContent(ctx context.Context, opts *ListOptions) iter.Seq2[*Insight, error] {
	return all(ctx, opts, s.ListContent)
}

// ListSubscribers returns one page of /v3/subscriber_insights: engagement
// per Subscriber.
func (s *InsightsService) ListSubscribers(ctx context.Context, opts *ListOptions) ([]*Insight, *Response, error) {
	return list[Insight](ctx, s.client, "/v3/subscriber_insights", TypeSubscriberInsights, opts)
}

// AllSubscribers iterates over every page of /v3/subscriber_insights.
func (s *InsightsService) AllSubscribers(ctx context.Context, opts *ListOptions) iter.Seq2[*Insight, error] {
	return all(ctx, opts, s.ListSubscribers)
}
