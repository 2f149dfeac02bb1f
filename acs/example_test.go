package acs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/feedworker/feedworker/acs"
)

// fakeService stands in for the service: it answers the token endpoint,
// prints every API request it receives, and answers with body.
func fakeService(status int, body string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == acs.DefaultTokenPath {
			fmt.Fprint(w, `{"access_token":"example-token","token_type":"Bearer","expires_in":3600}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Println(r.Method, r.URL.Path)
		if f := r.URL.Query().Get("filters_json"); f != "" {
			fmt.Println("filters_json:", f)
		}
		if len(b) > 0 {
			fmt.Println("body:", string(b))
		}
		if h := r.Header.Get("Authorization"); !strings.HasPrefix(h, "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
}

// Create a Story filed under two Categories, authenticating with OAuth 2.0
// client credentials.
func ExampleStoriesService_Create() {
	srv := fakeService(http.StatusCreated, `{"data":{"id":501,"type":"story","title":"Canteen reopens","categories":[{"id":12},{"id":14}]}}`)
	defer srv.Close()

	creds := acs.ClientCredentials{
		TokenURL:     acs.TokenURL(srv.URL),
		ClientID:     "feedworker",
		ClientSecret: "secret",
	}
	c, err := acs.NewClient(srv.URL, creds.HTTPClient(nil))
	if err != nil {
		log.Fatal(err)
	}
	published, err := acs.ParseTimestamp("2026-03-01 08:00:00")
	if err != nil {
		log.Fatal(err)
	}
	story, _, err := c.Stories.Create(context.Background(), &acs.StoryCreate{
		Title:          acs.Ptr("Canteen reopens"),
		Categories:     []acs.Ref{{ID: 12}, {ID: 14}},
		ExternalID:     acs.Ptr("intranet:canteen-2026"),
		PublishDateUTC: &published,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created", story.Type, story.ID, "in", len(story.Categories), "categories")
	// Output:
	// POST /v3/story
	// body: {"template":{"version":"3.0","data":[{"title":"Canteen reopens","categories":[{"id":12},{"id":14}],"external_id":"intranet:canteen-2026","publish_date_utc":"2026-03-01 08:00:00"}]}}
	// created story 501 in 2 categories
}

// Find Content by its external id with a filter; an empty list means it is
// not there.
func ExampleContentService_List() {
	srv := fakeService(http.StatusOK, `{"data":[{"id":501,"type":"story","external_id":"intranet:canteen-2026"}],"page":1,"page_size":100,"total":1}`)
	defer srv.Close()

	c, err := acs.NewClient(srv.URL, acs.StaticToken("token").HTTPClient(nil))
	if err != nil {
		log.Fatal(err)
	}
	opts := &acs.ListOptions{Filter: acs.Filter{}.Eq("external_id", "intranet:canteen-2026")}
	items, resp, err := c.Content.List(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range items {
		fmt.Println("found", it.Type, it.ID, "of", resp.Total)
	}
	// Output:
	// GET /v3/content
	// filters_json: {"external_id":{"eq":"intranet:canteen-2026"}}
	// found story 501 of 1
}

// Add one Subscriber to a Segment: the spec allows one per request.
func ExampleSegmentsService_AddSubscriber() {
	srv := fakeService(http.StatusCreated, `{"data":{"id":77}}`)
	defer srv.Close()

	c, err := acs.NewClient(srv.URL, acs.StaticToken("token").HTTPClient(nil))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Segments.AddSubscriber(context.Background(), 9, 77); err != nil {
		log.Fatal(err)
	}
	fmt.Println("added")
	// Output:
	// POST /v3/segment/9/subscriber
	// body: {"template":{"version":"3.0","data":[{"id":77}]}}
	// added
}

// Unsubscribe a Subscriber who retired (departure code 6).
func ExampleSubscribersService_Unsubscribe() {
	srv := fakeService(http.StatusOK, `{"data":{"id":77}}`)
	defer srv.Close()

	c, err := acs.NewClient(srv.URL, acs.StaticToken("token").HTTPClient(nil))
	if err != nil {
		log.Fatal(err)
	}
	left, err := acs.ParseTimestamp("2026-02-28 17:00:00")
	if err != nil {
		log.Fatal(err)
	}
	u, _, err := c.Subscribers.Unsubscribe(context.Background(), 77, &acs.UnsubscribeRequest{
		TerminationDateUTC:   &left,
		TerminationVoluntary: acs.Ptr(true),
		DepartureCode:        &acs.IDRef{ID: acs.DepartureCodeRetired},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unsubscribe", u.ID)
	// Output:
	// POST /v3/subscriber/77/unsubscribe
	// body: {"template":{"version":"3.0","data":[{"termination_date_utc":"2026-02-28 17:00:00","termination_voluntary":true,"departure_code":{"id":6}}]}}
	// unsubscribe 77
}

// Branch on the kind of failure with errors.Is; the *Error says where.
func ExampleError() {
	srv := fakeService(http.StatusNotFound, `{"error":{"status":404,"message":"no such story"}}`)
	defer srv.Close()

	c, err := acs.NewClient(srv.URL, acs.StaticToken("token").HTTPClient(nil))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Stories.Delete(context.Background(), 404)
	fmt.Println(errors.Is(err, acs.ErrNotFound))
	fmt.Println(err)
	// Output:
	// DELETE /v3/story/404
	// true
	// acs: DELETE /v3/story/{id}: 404: no such story
}
