// Package acs is a Go client for the whole Audience and Content Service API,
// version 3: Subscribers and Unsubscribes, Segments, Categories, Content
// (Stories, Events, Links, Needs), Blasts, Insights, the reference lists and
// the template endpoints.
//
// It depends on the standard library, golang.org/x/oauth2 and
// golang.org/x/time only, and knows nothing of logging, metrics or
// configuration: those reach it through an http.Client and a [Hook].
//
// # Usage
//
// Build an http.Client that authenticates, then a [Client] on the service's
// base URL (the spec's {base_url}; every path begins with /v3):
//
//	creds := acs.ClientCredentials{
//		TokenURL:     acs.TokenURL("https://acs.example.com"),
//		ClientID:     id,
//		ClientSecret: secret,
//	}
//	c, err := acs.NewClient("https://acs.example.com", creds.HTTPClient(nil))
//
//	story, _, err := c.Stories.Create(ctx, &acs.StoryCreate{
//		Title:      acs.Ptr("Canteen reopens"),
//		Categories: []acs.Ref{{ID: 12}},
//	})
//
// Each resource has a service on the client, all sharing it: c.Subscribers,
// c.Unsubscribes, c.Segments, c.Categories, c.Content, c.Stories, c.Events,
// c.Links, c.Needs, c.Blasts, c.Insights, c.Reference, c.Templates.
//
// # Naming
//
// Every method has the shape (ctx, path ids..., body) (*T or []*T,
// *Response, error); deletes return (*Response, error). The method name is
// the verb of the call, on the service of the path's first segment:
//
//   - Get reads one resource by id, List reads one page of a collection and
//     All iterates over every page of it;
//   - Create is POST on a collection, Update is PUT on an id, Delete is
//     DELETE on an id;
//   - CreateRef (on Stories, Events, Links, Needs) is Create reading back
//     only the new item's id and self link, for callers that keep no more;
//   - a sub-collection or action is named by the spec's own word:
//     Subscribers.Unsubscribe, Subscribers.Interests,
//     Segments.AddSubscriber, Segments.ListSubscribers,
//     Segments.RemoveSubscriber;
//   - a read-only list the service names is List plus its name:
//     Reference.ListPrivacyLevels, ListSubscriberStatuses,
//     ListDepartureCodes, ListBlastStatuses; Insights.ListContent and
//     Insights.ListSubscribers (with AllContent, AllSubscribers).
//
// Request bodies are types named after the resource and the verb
// (StoryCreate, StoryUpdate, SubscriberCreate, UnsubscribeRequest); the
// resources read back are named after the resource (Subscriber, Content,
// Segment). Ids are int64.
//
// Content of every type is read through c.Content (the spec has no GET on the
// per-type paths); each piece carries Type ("story", "event", "link",
// "need"), which is empty when the server leaves it out. c.Stories, c.Events,
// c.Links and c.Needs create, update and delete.
//
// # Requests
//
// Every POST and PUT body is the envelope
// {"template":{"version":"3.0","data":[object]}} with Content-Type
// application/json; an Update puts its id argument into the object's id.
// Each content type has its own create and update type holding exactly the
// fields the spec gives it, so an Event cannot send publish_date_utc and a
// Story cannot send external_url; a Need sends publish_date_utc and the
// need_* fields on create only, external_url on update only, and its author
// as {id} on create. Read-only fields (id on create, self) are not settable.
// Optional fields are pointers ([Ptr] or Go's new(v) makes one), omitted
// when nil; optional lists are omitted when nil and sent as [] when empty
// but non-nil, which clears them on update.
//
// Times are [Timestamp]: exactly YYYY-MM-DD HH:MM:SS in UTC on the wire, in
// both directions; anything else is an error.
//
// # Validation
//
// Before sending, the client checks what the spec states and refuses with an
// error matching [ErrInvalid], without any request: first_name, last_name
// and email on Subscriber create; subscriber_status 2, 3 or 4 (1 is
// reserved) and subscriber_privacy_level 1, 2 or 3 on create and update;
// one Subscriber per Segment add (the signature takes one id); every
// timestamp's shape; positive path ids; a description on Segment and
// Category create; filters the spec cannot express.
//
// # Responses
//
// The spec does not show response bodies. One decoder reads all of them and
// accepts a bare object or array, {"data": ...} (with optional page,
// page_size, total, copied into [Response]) and the request envelope;
// unknown fields are ignored. A method returning one object returns nil
// with a nil error when the body is empty (a 204, say). Records whose fields
// the spec only partly shows (Subscriber, Unsubscribe, Interest, Insight,
// ReferenceItem) keep the whole object in Raw; [DecodeRaw] reads it.
//
// Values are read tolerantly, since a real service may write them
// otherwise than the sandbox: integers as numbers or numeric strings,
// booleans as true/false, "true"/"false" or 0/1, timestamps in the spec's
// shape or RFC 3339 (converted to UTC), a reference as a bare id, null as
// absent. Template flags may be booleans, names or lists of operations or
// content types (see [Template.UnmarshalJSON]). What the client sends
// stays exactly as the spec says. A 2xx answer that still cannot be read
// is a [*DecodeError] matching [ErrUnreadable], naming the field; it is
// never retried, since the service carried the request out.
//
// # Lists, pages and filters
//
// List methods take [ListOptions]: Page (default 1), PageSize (default 100)
// and a [Filter], sent as filters_json. All walks the pages for you:
//
//	opts := &acs.ListOptions{Filter: acs.Filter{}.Eq("external_id", "feed-1:42")}
//	for item, err := range c.Content.All(ctx, opts) {
//		if err != nil {
//			return err
//		}
//		use(item)
//	}
//
// It stops after an empty page, at the first error, or after a page shorter
// than the page size (the one the answer reported, else the one asked for),
// unless the answer reported a total not reached yet: a server may serve
// fewer entries than asked without saying so.
// The Filter builder has all eight operators (Eq, Neq, Lt, Lte, Gt, Gte, In,
// IsNull). Only fields the data type's template marks searchable may be
// filtered on; with [WithFilterCheck] the client fetches the template (once
// per type) and refuses other fields before sending. [TemplatesService.Get]
// returns a type's fields.
//
// # Authentication
//
// Auth is an http.RoundTripper in the http.Client given to [NewClient], so
// callers compose it with their own transports (auth, then instrumentation,
// then the network). [ClientCredentials] runs the OAuth 2.0 client
// credentials grant: it reuses a token until it expires, and a 401 or 403
// on a request sent with a reused token makes it fetch a new token and send
// the request once more (bodies are replayed through GetBody); a 401 or
// 403 to a token fetched for the request stands. [StaticToken]
// sends a fixed bearer token. Neither puts a token or secret in an error,
// and both hide them when formatted. Neither sends the token on a redirect
// to another domain (a subdomain of the API's host keeps it), nor from
// https to http: a redirect carries it only as far as http.Client lets a
// caller's own Authorization header go.
//
// # Errors
//
// A non-2xx answer is an [*Error] with the method, the route template (such
// as /v3/story/{id}), the status, the server's message and field, and
// RetryAfter. Branch on the sentinels with errors.Is: [ErrNotFound],
// [ErrUnauthorized], [ErrForbidden], [ErrRateLimited], [ErrConflict],
// [ErrInvalid]. When the context ends, the error wraps the context's error,
// so errors.Is(err, context.Canceled) holds.
//
// # Retries and rate limits
//
// GET, PUT and DELETE are retried on 408, 429, 5xx and transport failures,
// with exponential backoff and jitter capped by [RetryPolicy] (see
// [DefaultRetryPolicy]), honouring Retry-After in seconds or as an HTTP
// date; a Retry-After beyond MaxDelay is returned to the caller instead of
// waited for. Retries stop at MaxAttempts, and early when the context's
// deadline would pass during the wait. POST is retried only when the
// connection was never made (the dial failed): any other POST failure may
// have created the resource, and the caller, who can look it up by
// external_id, owns that decision. [WithRateLimiter] makes every attempt
// wait for a golang.org/x/time/rate limiter first.
//
// [WithAdaptiveRate] paces every attempt of the client, from every
// goroutine, with an [AdaptiveRate]: a ceiling (the configured rate), and
// below it additive increase while answers come and multiplicative
// decrease on a 429 or a 503 with Retry-After, whose Retry-After then
// holds every request of the client exactly as long as asked. The
// service's rate-limit headers (RateLimit-Policy, RateLimit, or
// RateLimit-Limit/-Remaining/-Reset and X-RateLimit-*) set the pace before
// it has to refuse. With a [Budget] the pace is drawn from a budget
// shared with other processes. [AdaptiveRate.State] reports the rate, the
// refusals and the waits; the package has no metrics library in it.
//
// Retrying is one policy, [RetryPolicy], with one backoff
// ([RetryPolicy.Backoff]). A caller that retries work itself (the
// publisher, which retries each item through its store so that a failing
// item holds no other back) sets MaxAttempts to 1 and uses the same
// Backoff, so nothing is retried twice over.
//
// # Instrumentation
//
// [WithHook] receives one [RequestInfo] per attempt: method, route template,
// status (0 without an answer), duration, attempt number and error. Route
// templates are bounded, so they make good metric labels.
//
// # Where the spec is silent
//
// Each choice below is held in one place:
//
//   - response shapes: the decoder in decode.go (func decode);
//   - success codes: any 2xx is success (Client.attempt in request.go);
//   - error body shape and the status to sentinel mapping: newError and
//     statusSentinel in errors.go;
//   - the token endpoint: [DefaultTokenPath] and [TokenURL] in auth.go;
//   - how the service refuses an expired or revoked token: a 401, or a 403
//     as some servers answer, on a request sent with a reused token is
//     taken for one; the token is fetched again and the request sent once
//     more, after which the answer stands (refusesToken in auth.go). A
//     real 403 therefore costs one extra token fetch and request;
//   - template endpoint paths and their answer: [DefaultTemplatePath] in
//     acs.go, [Template] in models.go;
//   - filter value encoding (in as one comma-separated string, isnull as a
//     boolean, times as Timestamp): [Filter.MarshalJSON] in filter.go;
//   - retry, backoff and Retry-After policy: [DefaultRetryPolicy] in acs.go
//     and Client.retryWait in request.go;
//   - rate-limit headers and how the pace adapts to refusals:
//     [AdaptiveRate] in adaptive.go;
//   - no maximum page size is enforced ([ListOptions] in list.go), and a
//     page shorter than asked is the last unless a reported total says
//     otherwise (func all in list.go);
//   - the content type on read: [Content].Type in models.go;
//   - fields of records the spec does not show (Unsubscribe, Interest,
//     Insight, reference items, extra Subscriber values): the Raw fields in
//     models.go;
//   - read-only self is not settable in request types: requests.go.
package acs
