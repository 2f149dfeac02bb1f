package acs

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestAPIDocMatchesClient checks the endpoint table of docs/API.md against
// the client: every method of every service is called once against a
// server, the route each sends is seen through the hook, and the table
// must list exactly those routes with exactly those methods. A method
// added to the client without a row, or a route changed, fails here; the
// message prints the table as it should read.
func TestAPIDocMatchesClient(t *testing.T) {
	t.Parallel()
	ts, err := ParseTimestamp("2026-03-01 08:30:00")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(ctx context.Context, c *Client) error{
		"Subscribers.List": func(ctx context.Context, c *Client) error { _, _, err := c.Subscribers.List(ctx, nil); return err },
		"Subscribers.All":  func(ctx context.Context, c *Client) error { return first(c.Subscribers.All(ctx, nil)) },
		"Subscribers.Get":  func(ctx context.Context, c *Client) error { _, _, err := c.Subscribers.Get(ctx, 42); return err },
		"Subscribers.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Create(ctx, &SubscriberCreate{FirstName: "A", LastName: "L", Email: "a@example.com",
				SubscriberStatus: IDRef{SubscriberStatusBlastsAndDigests}, SubscriberPrivacyLevel: IDRef{PrivacyPersonalize}})
			return err
		},
		"Subscribers.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Update(ctx, 42, &SubscriberUpdate{SubscriberStatus: IDRef{2}, SubscriberPrivacyLevel: IDRef{3}})
			return err
		},
		"Subscribers.Unsubscribe": func(ctx context.Context, c *Client) error {
			_, _, err := c.Subscribers.Unsubscribe(ctx, 42, nil)
			return err
		},
		"Subscribers.Interests": func(ctx context.Context, c *Client) error { _, _, err := c.Subscribers.Interests(ctx, 42); return err },
		"Unsubscribes.List":     func(ctx context.Context, c *Client) error { _, _, err := c.Unsubscribes.List(ctx, nil); return err },
		"Unsubscribes.All":      func(ctx context.Context, c *Client) error { return first(c.Unsubscribes.All(ctx, nil)) },
		"Unsubscribes.Get":      func(ctx context.Context, c *Client) error { _, _, err := c.Unsubscribes.Get(ctx, 42); return err },
		"Reference.ListPrivacyLevels": func(ctx context.Context, c *Client) error {
			_, _, err := c.Reference.ListPrivacyLevels(ctx)
			return err
		},
		"Reference.ListSubscriberStatuses": func(ctx context.Context, c *Client) error {
			_, _, err := c.Reference.ListSubscriberStatuses(ctx)
			return err
		},
		"Reference.ListDepartureCodes": func(ctx context.Context, c *Client) error {
			_, _, err := c.Reference.ListDepartureCodes(ctx)
			return err
		},
		"Reference.ListBlastStatuses": func(ctx context.Context, c *Client) error {
			_, _, err := c.Reference.ListBlastStatuses(ctx)
			return err
		},
		"Content.List": func(ctx context.Context, c *Client) error { _, _, err := c.Content.List(ctx, nil); return err },
		"Content.All":  func(ctx context.Context, c *Client) error { return first(c.Content.All(ctx, nil)) },
		"Content.Get":  func(ctx context.Context, c *Client) error { _, _, err := c.Content.Get(ctx, 42); return err },
		"Stories.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Stories.Create(ctx, &StoryCreate{Title: Ptr("T")})
			return err
		},
		"Stories.CreateRef": func(ctx context.Context, c *Client) error {
			_, _, err := c.Stories.CreateRef(ctx, &StoryCreate{Title: Ptr("T")})
			return err
		},
		"Stories.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Stories.Update(ctx, 42, &StoryUpdate{Title: Ptr("T")})
			return err
		},
		"Stories.Delete": func(ctx context.Context, c *Client) error { _, err := c.Stories.Delete(ctx, 42); return err },
		"Events.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Events.Create(ctx, &EventCreate{Title: Ptr("E"), EventStartDateTimeUTC: &ts})
			return err
		},
		"Events.CreateRef": func(ctx context.Context, c *Client) error {
			_, _, err := c.Events.CreateRef(ctx, &EventCreate{Title: Ptr("E"), EventStartDateTimeUTC: &ts})
			return err
		},
		"Events.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Events.Update(ctx, 42, &EventUpdate{EventLocation: Ptr("Hall")})
			return err
		},
		"Events.Delete": func(ctx context.Context, c *Client) error { _, err := c.Events.Delete(ctx, 42); return err },
		"Links.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Links.Create(ctx, &LinkCreate{Title: Ptr("L"), ExternalURL: Ptr("https://x.test/l")})
			return err
		},
		"Links.CreateRef": func(ctx context.Context, c *Client) error {
			_, _, err := c.Links.CreateRef(ctx, &LinkCreate{Title: Ptr("L"), ExternalURL: Ptr("https://x.test/l")})
			return err
		},
		"Links.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Links.Update(ctx, 42, &LinkUpdate{Private: Ptr(true)})
			return err
		},
		"Links.Delete": func(ctx context.Context, c *Client) error { _, err := c.Links.Delete(ctx, 42); return err },
		"Needs.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Needs.Create(ctx, &NeedCreate{Title: Ptr("N")})
			return err
		},
		"Needs.CreateRef": func(ctx context.Context, c *Client) error {
			_, _, err := c.Needs.CreateRef(ctx, &NeedCreate{Title: Ptr("N")})
			return err
		},
		"Needs.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Needs.Update(ctx, 42, &NeedUpdate{ExternalURL: Ptr("https://x.test/n")})
			return err
		},
		"Needs.Delete":  func(ctx context.Context, c *Client) error { _, err := c.Needs.Delete(ctx, 42); return err },
		"Segments.List": func(ctx context.Context, c *Client) error { _, _, err := c.Segments.List(ctx, nil); return err },
		"Segments.All":  func(ctx context.Context, c *Client) error { return first(c.Segments.All(ctx, nil)) },
		"Segments.Get":  func(ctx context.Context, c *Client) error { _, _, err := c.Segments.Get(ctx, 42); return err },
		"Segments.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Segments.Create(ctx, &SegmentCreate{Description: "Staff"})
			return err
		},
		"Segments.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Segments.Update(ctx, 42, &SegmentUpdate{Description: Ptr("All staff")})
			return err
		},
		"Segments.Delete":        func(ctx context.Context, c *Client) error { _, err := c.Segments.Delete(ctx, 42); return err },
		"Segments.AddSubscriber": func(ctx context.Context, c *Client) error { _, err := c.Segments.AddSubscriber(ctx, 42, 9); return err },
		"Segments.ListSubscribers": func(ctx context.Context, c *Client) error {
			_, _, err := c.Segments.ListSubscribers(ctx, 42)
			return err
		},
		"Segments.RemoveSubscriber": func(ctx context.Context, c *Client) error {
			_, err := c.Segments.RemoveSubscriber(ctx, 42, 9)
			return err
		},
		"Categories.List": func(ctx context.Context, c *Client) error { _, _, err := c.Categories.List(ctx, nil); return err },
		"Categories.All":  func(ctx context.Context, c *Client) error { return first(c.Categories.All(ctx, nil)) },
		"Categories.Get":  func(ctx context.Context, c *Client) error { _, _, err := c.Categories.Get(ctx, 42); return err },
		"Categories.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Categories.Create(ctx, &CategoryCreate{Description: "News"})
			return err
		},
		"Categories.Delete": func(ctx context.Context, c *Client) error { _, err := c.Categories.Delete(ctx, 42); return err },
		"Blasts.List":       func(ctx context.Context, c *Client) error { _, _, err := c.Blasts.List(ctx, nil); return err },
		"Blasts.All":        func(ctx context.Context, c *Client) error { return first(c.Blasts.All(ctx, nil)) },
		"Blasts.Get":        func(ctx context.Context, c *Client) error { _, _, err := c.Blasts.Get(ctx, 42); return err },
		"Blasts.Create": func(ctx context.Context, c *Client) error {
			_, _, err := c.Blasts.Create(ctx, &BlastCreate{Name: Ptr("B")})
			return err
		},
		"Blasts.Update": func(ctx context.Context, c *Client) error {
			_, _, err := c.Blasts.Update(ctx, 42, &BlastUpdate{Name: Ptr("B")})
			return err
		},
		"Blasts.Delete":        func(ctx context.Context, c *Client) error { _, err := c.Blasts.Delete(ctx, 42); return err },
		"Insights.ListContent": func(ctx context.Context, c *Client) error { _, _, err := c.Insights.ListContent(ctx, nil); return err },
		"Insights.AllContent":  func(ctx context.Context, c *Client) error { return first(c.Insights.AllContent(ctx, nil)) },
		"Insights.ListSubscribers": func(ctx context.Context, c *Client) error {
			_, _, err := c.Insights.ListSubscribers(ctx, nil)
			return err
		},
		"Insights.AllSubscribers": func(ctx context.Context, c *Client) error { return first(c.Insights.AllSubscribers(ctx, nil)) },
		"Templates.Get":           func(ctx context.Context, c *Client) error { _, _, err := c.Templates.Get(ctx, TypeStory); return err },
		"Templates.CheckFilter": func(ctx context.Context, c *Client) error {
			return c.Templates.CheckFilter(ctx, TypeStory, Filter{}.Eq("title", "x"))
		},
	}

	// Every exported method of every service has a call above.
	var missing []string
	ct := reflect.TypeFor[Client]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Pointer || !strings.HasSuffix(f.Type.Elem().Name(), "Service") {
			continue
		}
		for j := range f.Type.NumMethod() {
			if name := f.Name + "." + f.Type.Method(j).Name; calls[name] == nil {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("client methods with no call in this test (add one, and a row to docs/API.md): %v", missing)
	}

	// Any answer will do: only the route each call sends matters.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[]}`)
	}))
	defer srv.Close()
	var mu sync.Mutex
	var current string
	sent := map[string]int{}     // client method → requests
	got := map[string][]string{} // "METHOD route" → client methods
	c, err := NewClient(srv.URL, srv.Client(), WithHook(func(_ context.Context, info RequestInfo) {
		route := strings.Replace(info.Route, "/"+TypeStory+"/template", "/{type}/template", 1)
		key := info.Method + " " + route
		mu.Lock()
		defer mu.Unlock()
		sent[current]++
		if !slices.Contains(got[key], current) {
			got[key] = append(got[key], current)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		mu.Lock()
		current = name
		mu.Unlock()
		_ = calls[name](t.Context(), c) // answers that do not decode are fine here
		mu.Lock()
		if sent[name] == 0 {
			t.Errorf("%s sent no request", name)
		}
		mu.Unlock()
	}

	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	want := docEndpoints(t, string(doc))
	var table strings.Builder
	for _, key := range slices.Sorted(maps.Keys(got)) {
		methods := got[key]
		slices.Sort(methods)
		method, route, _ := strings.Cut(key, " ")
		fmt.Fprintf(&table, "| %s | `%s` | `%s` |\n", method, route, strings.Join(methods, "`, `"))
		got[key] = methods
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("docs/API.md's endpoint table differs from what the client sends; its rows should read:\n%s", table.String())
	}
}

// first reads an iterator's first item, and so sends its first request.
func first[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		return err
	}
	return nil
}

var docRow = regexp.MustCompile("^\\| (GET|POST|PUT|DELETE) \\| `([^`]+)` \\| (.+) \\|$")

// docEndpoints reads the rows between the endpoint table's markers.
func docEndpoints(t *testing.T, doc string) map[string][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- endpoints:begin -->")
	body, _, ok2 := strings.Cut(rest, "<!-- endpoints:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/API.md lacks the <!-- endpoints:begin --> and <!-- endpoints:end --> markers")
	}
	out := map[string][]string{}
	for _, line := range strings.Split(body, "\n") {
		m := docRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		var methods []string
		for _, f := range strings.Split(m[3], ",") {
			methods = append(methods, strings.Trim(strings.TrimSpace(f), "`"))
		}
		slices.Sort(methods)
		out[m[1]+" "+m[2]] = methods
	}
	return out
}
