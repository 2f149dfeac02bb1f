package acs

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// env wraps a data object the way every POST and PUT body must be.
func env(obj string) string {
	return `{"template":{"version":"3.0","data":[` + obj + `]}}`
}

const (
	oneReply  = `{"data":{"id":7}}`
	listReply = `{"data":[{"id":7}],"page":1,"page_size":100,"total":1}`
)

// firstID returns the id of a result, whatever its type, or -1 when the
// call returned nothing, so the table can check decoding as well.
func firstID(v any) int64 {
	switch x := v.(type) {
	case *Subscriber:
		if x != nil {
			return x.ID
		}
	case *Unsubscribe:
		if x != nil {
			return x.ID
		}
	case *Segment:
		if x != nil {
			return x.ID
		}
	case *Category:
		if x != nil {
			return x.ID
		}
	case *Content:
		if x != nil {
			return x.ID
		}
	case *Blast:
		if x != nil {
			return x.ID
		}
	case *Template:
		if x != nil && len(x.Fields) > 0 {
			return 7
		}
	case []*Subscriber:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Unsubscribe:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Segment:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Category:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Content:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Blast:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Interest:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*ReferenceItem:
		if len(x) == 1 {
			return x[0].ID
		}
	case []*Insight:
		if len(x) == 1 && string(x[0].Raw) == `{"id":7}` {
			return 7
		}
	}
	return -1
}

// TestEndpoints sends one request to every endpoint of spec section 4 and
// the template endpoint, and checks the exact method, path, query, headers
// and body, and that the answer is decoded.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	ts, err := ParseTimestamp("2026-03-01 08:30:00")
	if err != nil {
		t.Fatal(err)
	}
	listOpts := &ListOptions{Page: 2, PageSize: 50, Filter: Filter{}.Eq("external_id", "x")}
	const listQuery = "filters_json=%7B%22external_id%22%3A%7B%22eq%22%3A%22x%22%7D%7D&page=2&page_size=50"

	tests := []struct {
		name   string
		call   func(ctx context.Context, c *Client) (any, error)
		method string
		path   string
		query  string
		body   string // "" means no body and no Content-Type
		reply  string // "" means 204 No Content
		wantID int64  // 0: the method returns nothing to check
	}{
		// 4.2 Subscribers and related lists.
		{
			name: "subscribers list", method: "GET", path: "/v3/subscriber", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Subscribers.List(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "subscribers create", method: "POST", path: "/v3/subscriber", reply: oneReply, wantID: 7,
			body: env(`{"first_name":"Ada","last_name":"Lovelace","email":"ada@example.com","subscriber_status":{"id":4},"subscriber_privacy_level":{"id":1}}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Subscribers.Create(ctx, &SubscriberCreate{
					FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com",
					SubscriberStatus: IDRef{SubscriberStatusBlastsAndDigests}, SubscriberPrivacyLevel: IDRef{PrivacyPersonalize},
				})
				return v, err
			},
		},
		{
			name: "subscribers get", method: "GET", path: "/v3/subscriber/42", reply: oneReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Subscribers.Get(ctx, 42)
				return v, err
			},
		},
		{
			name: "subscribers update", method: "PUT", path: "/v3/subscriber/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"email":"ada@example.org","subscriber_status":{"id":2},"subscriber_privacy_level":{"id":3}}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Subscribers.Update(ctx, 42, &SubscriberUpdate{
					Email: Ptr("ada@example.org"), SubscriberStatus: IDRef{2}, SubscriberPrivacyLevel: IDRef{3},
				})
				return v, err
			},
		},
		{
			name: "subscribers unsubscribe", method: "POST", path: "/v3/subscriber/42/unsubscribe", reply: oneReply, wantID: 7,
			body: env(`{"termination_date_utc":"2026-03-01 08:30:00","termination_voluntary":false,"departure_code":{"id":6}}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Subscribers.Unsubscribe(ctx, 42, &UnsubscribeRequest{
					TerminationDateUTC: &ts, TerminationVoluntary: Ptr(false), DepartureCode: &IDRef{DepartureCodeRetired},
				})
				return v, err
			},
		},
		{
			name: "subscribers unsubscribe without body", method: "POST", path: "/v3/subscriber/42/unsubscribe",
			call: func(ctx context.Context, c *Client) (any, error) {
				_, _, err := c.Subscribers.Unsubscribe(ctx, 42, nil)
				return nil, err
			},
		},
		{
			name: "subscribers interests", method: "GET", path: "/v3/subscriber/42/subscriber_interest", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Subscribers.Interests(ctx, 42)
				return v, err
			},
		},
		{
			name: "privacy levels", method: "GET", path: "/v3/subscriber_privacy_level", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Reference.ListPrivacyLevels(ctx)
				return v, err
			},
		},
		{
			name: "subscriber statuses", method: "GET", path: "/v3/subscriber_status", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Reference.ListSubscriberStatuses(ctx)
				return v, err
			},
		},
		{
			name: "departure codes", method: "GET", path: "/v3/subscriber_departure_code", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Reference.ListDepartureCodes(ctx)
				return v, err
			},
		},
		{
			name: "unsubscribes list", method: "GET", path: "/v3/unsubscribe", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Unsubscribes.List(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "unsubscribes get", method: "GET", path: "/v3/unsubscribe/42", reply: oneReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Unsubscribes.Get(ctx, 42)
				return v, err
			},
		},

		// 4.3 Content.
		{
			name: "content list", method: "GET", path: "/v3/content", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Content.List(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "content get", method: "GET", path: "/v3/content/42", reply: oneReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) { v, _, err := c.Content.Get(ctx, 42); return v, err },
		},
		{
			name: "story create", method: "POST", path: "/v3/story", reply: oneReply, wantID: 7,
			body: env(`{"title":"T","categories":[{"id":3},{"id":4}],"external_id":"e1","publish_date_utc":"2026-03-01 08:30:00","evergreen":true}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Stories.Create(ctx, &StoryCreate{
					Title: Ptr("T"), Categories: []Ref{{ID: 3}, {ID: 4}}, ExternalID: Ptr("e1"), PublishDateUTC: &ts, Evergreen: Ptr(true),
				})
				return v, err
			},
		},
		{
			name: "story update", method: "PUT", path: "/v3/story/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"title":"T2","categories":[]}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Stories.Update(ctx, 42, &StoryUpdate{Title: Ptr("T2"), Categories: []Ref{}})
				return v, err
			},
		},
		{
			name: "story delete", method: "DELETE", path: "/v3/story/42",
			call: func(ctx context.Context, c *Client) (any, error) {
				_, err := c.Stories.Delete(ctx, 42)
				return nil, err
			},
		},
		{
			name: "event create", method: "POST", path: "/v3/event", reply: oneReply, wantID: 7,
			body: env(`{"title":"E","external_url":"https://x.test/e","event_city":"Oslo","event_all_day":false,"event_start_date_time_utc":"2026-03-01 08:30:00","event_time_zone":{"id":9}}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Events.Create(ctx, &EventCreate{
					Title: Ptr("E"), ExternalURL: Ptr("https://x.test/e"), EventCity: Ptr("Oslo"), EventAllDay: Ptr(false),
					EventStartDateTimeUTC: &ts, EventTimeZone: &Ref{ID: 9},
				})
				return v, err
			},
		},
		{
			name: "event update", method: "PUT", path: "/v3/event/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"event_location":"Hall"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Events.Update(ctx, 42, &EventUpdate{EventLocation: Ptr("Hall")})
				return v, err
			},
		},
		{
			name: "event delete", method: "DELETE", path: "/v3/event/42",
			call: func(ctx context.Context, c *Client) (any, error) { _, err := c.Events.Delete(ctx, 42); return nil, err },
		},
		{
			name: "link create", method: "POST", path: "/v3/link", reply: oneReply, wantID: 7,
			body: env(`{"author":{"id":5},"title":"L","expiration_date_utc":"2026-03-01 08:30:00","external_url":"https://x.test/l"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Links.Create(ctx, &LinkCreate{
					Author: &Ref{ID: 5}, Title: Ptr("L"), ExpirationDateUTC: &ts, ExternalURL: Ptr("https://x.test/l"),
				})
				return v, err
			},
		},
		{
			name: "link update", method: "PUT", path: "/v3/link/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"private":true}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Links.Update(ctx, 42, &LinkUpdate{ID: 42, Private: Ptr(true)})
				return v, err
			},
		},
		{
			name: "link delete", method: "DELETE", path: "/v3/link/42",
			call: func(ctx context.Context, c *Client) (any, error) { _, err := c.Links.Delete(ctx, 42); return nil, err },
		},
		{
			name: "need create", method: "POST", path: "/v3/need", reply: oneReply, wantID: 7,
			body: env(`{"author":{"id":5},"title":"N","need_quantity":12,"need_by_date_utc":"2026-03-01 08:30:00"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Needs.Create(ctx, &NeedCreate{Author: &IDRef{ID: 5}, Title: Ptr("N"), NeedQuantity: Ptr[int64](12), NeedByDateUTC: &ts})
				return v, err
			},
		},
		{
			name: "need update", method: "PUT", path: "/v3/need/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"author":{"id":5,"self":"/v3/author/5"},"external_url":"https://x.test/n"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Needs.Update(ctx, 42, &NeedUpdate{Author: &Ref{ID: 5, Self: "/v3/author/5"}, ExternalURL: Ptr("https://x.test/n")})
				return v, err
			},
		},
		{
			name: "need delete", method: "DELETE", path: "/v3/need/42",
			call: func(ctx context.Context, c *Client) (any, error) { _, err := c.Needs.Delete(ctx, 42); return nil, err },
		},

		// 4.4 Segments.
		{
			name: "segments list", method: "GET", path: "/v3/segment", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Segments.List(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "segments create", method: "POST", path: "/v3/segment", reply: oneReply, wantID: 7,
			body: env(`{"description":"Staff","external_id":"hr-1"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Segments.Create(ctx, &SegmentCreate{Description: "Staff", ExternalID: Ptr("hr-1")})
				return v, err
			},
		},
		{
			name: "segments get", method: "GET", path: "/v3/segment/42", reply: oneReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) { v, _, err := c.Segments.Get(ctx, 42); return v, err },
		},
		{
			name: "segments update", method: "PUT", path: "/v3/segment/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"description":"All staff","external_id":"hr-2"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Segments.Update(ctx, 42, &SegmentUpdate{Description: Ptr("All staff"), ExternalID: Ptr("hr-2")})
				return v, err
			},
		},
		{
			name: "segments delete", method: "DELETE", path: "/v3/segment/42",
			call: func(ctx context.Context, c *Client) (any, error) {
				_, err := c.Segments.Delete(ctx, 42)
				return nil, err
			},
		},
		{
			name: "segments add subscriber", method: "POST", path: "/v3/segment/42/subscriber", reply: oneReply,
			body: env(`{"id":9}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				_, err := c.Segments.AddSubscriber(ctx, 42, 9)
				return nil, err
			},
		},
		{
			name: "segments list subscribers", method: "GET", path: "/v3/segment/42/subscriber", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Segments.ListSubscribers(ctx, 42)
				return v, err
			},
		},
		{
			name: "segments remove subscriber", method: "DELETE", path: "/v3/segment/42/subscriber/9",
			call: func(ctx context.Context, c *Client) (any, error) {
				_, err := c.Segments.RemoveSubscriber(ctx, 42, 9)
				return nil, err
			},
		},

		// 4.5 Categories.
		{
			name: "categories list", method: "GET", path: "/v3/category", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Categories.List(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "categories create", method: "POST", path: "/v3/category", reply: oneReply, wantID: 7,
			body: env(`{"description":"News"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Categories.Create(ctx, &CategoryCreate{Description: "News"})
				return v, err
			},
		},
		{
			name: "categories get", method: "GET", path: "/v3/category/42", reply: oneReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Categories.Get(ctx, 42)
				return v, err
			},
		},
		{
			name: "categories delete", method: "DELETE", path: "/v3/category/42",
			call: func(ctx context.Context, c *Client) (any, error) {
				_, err := c.Categories.Delete(ctx, 42)
				return nil, err
			},
		},

		// 4.6 Blasts.
		{
			name: "blasts list", method: "GET", path: "/v3/blast", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Blasts.List(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "blasts create", method: "POST", path: "/v3/blast", reply: oneReply, wantID: 7,
			body: env(`{"status":{"id":3},"blast_template":{"id":2},"blast_merge_fields":[{"id":1,"type":{"id":2},"value":"v"}],"name":"B","subject":"S","target_segments":[{"id":4}],"date_scheduled_utc":"2026-03-01 08:30:00"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Blasts.Create(ctx, &BlastCreate{
					Status: &IDRef{BlastStatusScheduled}, BlastTemplate: &IDRef{2},
					BlastMergeFields: []MergeField{{ID: 1, Type: IDRef{2}, Value: "v"}},
					Name:             Ptr("B"), Subject: Ptr("S"), TargetSegments: []IDRef{{4}}, DateScheduledUTC: &ts,
				})
				return v, err
			},
		},
		{
			name: "blasts get", method: "GET", path: "/v3/blast/42", reply: oneReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) { v, _, err := c.Blasts.Get(ctx, 42); return v, err },
		},
		{
			name: "blasts update", method: "PUT", path: "/v3/blast/42", reply: oneReply, wantID: 7,
			body: env(`{"id":42,"status":{"id":1},"reply_to_email":"news@example.com"}`),
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Blasts.Update(ctx, 42, &BlastUpdate{Status: &IDRef{BlastStatusDraft}, ReplyToEmail: Ptr("news@example.com")})
				return v, err
			},
		},
		{
			name: "blasts delete", method: "DELETE", path: "/v3/blast/42",
			call: func(ctx context.Context, c *Client) (any, error) { _, err := c.Blasts.Delete(ctx, 42); return nil, err },
		},
		{
			name: "blast statuses", method: "GET", path: "/v3/blast_status", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Reference.ListBlastStatuses(ctx)
				return v, err
			},
		},

		// 4.7 Insights.
		{
			name: "content insights", method: "GET", path: "/v3/content_insights", query: listQuery, reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Insights.ListContent(ctx, listOpts)
				return v, err
			},
		},
		{
			name: "subscriber insights", method: "GET", path: "/v3/subscriber_insights", reply: listReply, wantID: 7,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Insights.ListSubscribers(ctx, nil)
				return v, err
			},
		},

		// Template endpoint (path from DefaultTemplatePath).
		{
			name: "template", method: "GET", path: "/v3/story/template", wantID: 7,
			reply: `{"data":{"type":"story","fields":[{"name":"external_id","type":"string","searchable":true,"required":false}]}}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				v, _, err := c.Templates.Get(ctx, TypeStory)
				return v, err
			},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if tt.reply == "" {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				status := http.StatusOK
				if r.Method == http.MethodPost {
					status = http.StatusCreated
				}
				reply(w, status, tt.reply)
			})
			c := newTestClient(t, rec)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()

			got, err := tt.call(ctx, c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tt.wantID != 0 {
				if id := firstID(got); id != tt.wantID {
					t.Errorf("decoded id = %d, want %d (result %#v)", id, tt.wantID, got)
				}
			}

			reqs := rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.method || r.Path != tt.path || r.RawQuery != tt.query {
				t.Errorf("request = %s %s?%s, want %s %s?%s", r.Method, r.Path, r.RawQuery, tt.method, tt.path, tt.query)
			}
			if r.Body != tt.body {
				t.Errorf("body:\n got %s\nwant %s", r.Body, tt.body)
			}
			wantHeader := map[string]string{
				"Authorization": "Bearer " + testToken,
				"Accept":        "application/json",
				"User-Agent":    defaultUserAgent,
				"Content-Type":  "",
			}
			if tt.body != "" {
				wantHeader["Content-Type"] = "application/json"
			}
			gotHeader := map[string]string{}
			for k := range wantHeader {
				gotHeader[k] = r.Header.Get(k)
			}
			if diff := cmp.Diff(wantHeader, gotHeader); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}

	// Every method+path pair of section 4 appears above: 45 of them.
	pairs := map[string]bool{}
	for _, tt := range tests {
		route := tt.method + " " + tt.path
		if strings.HasSuffix(tt.path, "/template") {
			continue
		}
		pairs[route] = true
	}
	if len(pairs) != 45 {
		t.Errorf("table covers %d method+path pairs, want the spec's 45", len(pairs))
	}
}

// TestUpdateIDMismatch: a body id that differs from the path id is refused.
func TestUpdateIDMismatch(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, oneReply) })
	c := newTestClient(t, rec)
	_, _, err := c.Stories.Update(context.Background(), 42, &StoryUpdate{ID: 41})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if rec.count() != 0 {
		t.Errorf("server saw %d requests, want 0", rec.count())
	}
}

// TestTemplatePathOption: the template path pattern is configurable.
func TestTemplatePathOption(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, 200, `{"type":"segment","fields":[]}`)
	})
	c := newTestClient(t, rec, WithTemplatePath("/v3/templates/{type}"))
	tmpl, _, err := c.Templates.Get(context.Background(), TypeSegment)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Type != "segment" {
		t.Errorf("type = %q, want segment", tmpl.Type)
	}
	if got := rec.requests()[0].Path; got != "/v3/templates/segment" {
		t.Errorf("path = %s, want /v3/templates/segment", got)
	}
	for _, bad := range []string{"v3/{type}", "/v3/template", "/{type}/{type}", "/a}b/{type}", "/{x}/{type}", "/v3/{type"} {
		if _, err := NewClient(rec.srv.URL, nil, WithTemplatePath(bad)); err == nil {
			t.Errorf("WithTemplatePath(%q) accepted", bad)
		}
	}
}

// TestPathParameterEscapedOnce: a string path parameter reaches the
// server escaped once, under a base URL whose own path needs escaping
// too: "a/b c" is one segment, "a%2Fb%20c", not "a%252Fb%2520c".
func TestPathParameterEscapedOnce(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, 200, `{"type":"x","fields":[]}`)
	})
	for _, tt := range []struct{ base, tmpl, typ, want string }{
		{"", DefaultTemplatePath, "a/b c", "/v3/a%2Fb%20c/template"},
		{"/my%20api", DefaultTemplatePath, "a/b", "/my%20api/v3/a%2Fb/template"},
		{"/my%20api", DefaultTemplatePath, "segment", "/my%20api/v3/segment/template"},
		{"", DefaultTemplatePath, "100%", "/v3/100%25/template"},
		{"", "/v3/ü t/{type}", "a/b", "/v3/%C3%BC%20t/a%2Fb"},
		{"", "/v3/100%/{type}", "a/b", "/v3/100%25/a%2Fb"},
	} {
		c, err := NewClient(rec.srv.URL+tt.base, nil, WithTemplatePath(tt.tmpl))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Templates.Get(context.Background(), tt.typ); err != nil {
			t.Fatalf("%s %q: %v", tt.base, tt.typ, err)
		}
		reqs := rec.requests()
		if got := reqs[len(reqs)-1].Path; got != tt.want {
			t.Errorf("base %q, template %q, type %q: path = %s, want %s", tt.base, tt.tmpl, tt.typ, got, tt.want)
		}
	}
	// A dot segment would be resolved away on its way: refused unsent.
	n := len(rec.requests())
	c := newTestClient(t, rec)
	for _, typ := range []string{".", ".."} {
		if _, _, err := c.Templates.Get(context.Background(), typ); !errors.Is(err, ErrInvalid) {
			t.Errorf("type %q: err = %v, want ErrInvalid", typ, err)
		}
	}
	if len(rec.requests()) != n {
		t.Error("a dot segment was sent")
	}
}

// TestBaseURLPrefix: a base URL with a path keeps it before /v3.
func TestBaseURLPrefix(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, oneReply) })
	c, err := NewClient(rec.srv.URL+"/api/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Content.Get(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.requests()[0].Path; got != "/api/v3/content/1" {
		t.Errorf("path = %s, want /api/v3/content/1", got)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://:8080", "http://h/?q=1", "http://u:p@h"} {
		if _, err := NewClient(bad, nil); err == nil {
			t.Errorf("NewClient(%q) accepted", bad)
		}
	}
}

// TestContentType: content read carries its type; a create answer without
// one gets the path's type, and a list tolerates its absence.
func TestContentType(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodPost {
			reply(w, 201, `{"data":{"id":3}}`)
			return
		}
		reply(w, 200, `{"data":[{"id":1,"type":"event","event_city":"Oslo"},{"id":2}]}`)
	})
	c := newTestClient(t, rec)
	items, _, err := c.Content.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*Content{{ID: 1, Type: TypeEvent, EventCity: Ptr("Oslo")}, {ID: 2}}
	if diff := cmp.Diff(want, items); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	got, _, err := c.Links.Create(context.Background(), &LinkCreate{Title: Ptr("x")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != TypeLink {
		t.Errorf("created type = %q, want link", got.Type)
	}
}

// TestOptions: user agent and retry policy options take effect or are
// refused.
func TestOptions(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, oneReply) })
	c := newTestClient(t, rec, WithUserAgent("publisher/1.0"))
	if _, _, err := c.Content.Get(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.requests()[0].Header.Get("User-Agent"); got != "publisher/1.0" {
		t.Errorf("User-Agent = %q", got)
	}
	for _, p := range []RetryPolicy{{MaxAttempts: 0}, {MaxAttempts: 2, BaseDelay: time.Second}, {MaxAttempts: 2, BaseDelay: -1}} {
		if _, err := NewClient(rec.srv.URL, nil, WithRetryPolicy(p)); err == nil {
			t.Errorf("WithRetryPolicy(%+v) accepted", p)
		}
	}
}
