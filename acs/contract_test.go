package acs_test

// Contract tests: every method of every service of *acs.Client runs against
// the real sandbox (package sandbox) behind httptest.NewServer, authenticated
// with ClientCredentials against the sandbox's token endpoint. They assert
// what a user of the client checks: ids that come back and read back, fields
// that round-trip exactly, filters that select exactly the expected items,
// pages, state transitions, validation, token refresh, retries and faults.
//
// The last subtest is a guard: it lists the exported methods of every
// service of acs.Client by reflection and fails when one of them was not
// exercised here, so a method added later needs a contract test too.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/feedworker/feedworker/acs"
	"github.com/feedworker/feedworker/sandbox"
)

// TestContract runs the contract subtests in parallel, each on its own
// sandbox, then checks that together they used every client method; once
// with the sandbox answering in its strict style, once in its loose one
// (string ids, RFC 3339 times, nulls, extra fields, template flags as
// lists), which the client must read alike.
func TestContract(t *testing.T) {
	for _, style := range []sandbox.Style{sandbox.StyleStrict, sandbox.StyleLoose} {
		t.Run(string(style), func(t *testing.T) {
			t.Parallel()
			testContract(t, newCoverage(style))
		})
	}
}

func testContract(t *testing.T, cov *coverage) {
	tests := []struct {
		name string
		fn   func(*testing.T, *coverage)
	}{
		{"content per type", testContentPerType},
		{"content filters and pages", testContentFilters},
		{"content concurrent creates", testContentConcurrent},
		{"content created by ref", testContentCreateRef},
		{"subscribers and unsubscribes", testSubscribers},
		{"segments", testSegments},
		{"categories", testCategories},
		{"default paging", testDefaultPaging},
		{"blasts", testBlasts},
		{"insights", testInsights},
		{"reference lists", testReference},
		{"templates", testTemplates},
		{"template fields match request types", testTemplateFields},
		{"filter check", testFilterCheck},
		{"strict validation", testValidation},
		{"client-side validation", testClientValidation},
		{"token expiry", testTokenExpiry},
		{"token refused on a reused token", testTokenRefresh},
		{"wrong credentials", testWrongCredentials},
		{"credentials by header and by form", testAuthStyles},
		{"faults retried", testFaultsRetried},
		{"faults returned", testFaultsReturned},
		{"commit then fail", testCommitThenFail},
		{"rate limit", testRateLimit},
	}
	var ran atomic.Int32
	groupOK := t.Run("api", func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ran.Add(1)
				tc.fn(t, cov)
			})
		}
	})
	t.Run("every client method is covered", func(t *testing.T) {
		if n := int(ran.Load()); n != len(tests) {
			t.Skipf("%d of %d contract subtests ran (-run filter): coverage is only known for the whole suite", n, len(tests))
		}
		if !groupOK {
			t.Skip("a contract subtest failed, so the methods after its failure were not reached")
		}
		all := clientMethods(t)
		if missing := uncovered(all, cov.names()); len(missing) > 0 {
			t.Errorf("client methods without a contract test against the sandbox: %s", strings.Join(missing, ", "))
		}
		if unknown := uncovered(cov.names(), all); len(unknown) > 0 {
			t.Errorf("contract tests mark methods that acs.Client does not have: %s", strings.Join(unknown, ", "))
		}
	})
}

// TestContractGuard checks the guard's own parts, so that it can fail: the
// reflection finds the services' methods, and a missing one is reported.
func TestContractGuard(t *testing.T) {
	all := clientMethods(t)
	for _, want := range []string{"Stories.Create", "Content.All", "Segments.RemoveSubscriber", "Templates.CheckFilter", "Insights.AllSubscribers"} {
		if !slices.Contains(all, want) {
			t.Errorf("clientMethods lacks %s; got %v", want, all)
		}
	}
	if len(all) < 50 {
		t.Errorf("clientMethods found %d methods; the client has more than 50", len(all))
	}
	partial := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "Needs.Update" })
	if got := uncovered(all, partial); !slices.Equal(got, []string{"Needs.Update"}) {
		t.Errorf("uncovered without Needs.Update = %v, want [Needs.Update]", got)
	}
}

// clientMethods lists "Service.Method" for every exported method of every
// service field of acs.Client. A field that is not a service fails the
// test, so that a new kind of field is looked at rather than skipped.
func clientMethods(t *testing.T) []string {
	t.Helper()
	var names []string
	ct := reflect.TypeFor[acs.Client]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type.Kind() != reflect.Pointer || !strings.HasSuffix(f.Type.Elem().Name(), "Service") {
			t.Errorf("acs.Client.%s is a %v, not a service: teach the contract guard about it", f.Name, f.Type)
			continue
		}
		for j := range f.Type.NumMethod() {
			names = append(names, f.Name+"."+f.Type.Method(j).Name)
		}
	}
	slices.Sort(names)
	return names
}

// uncovered returns the names of all that are not in have, sorted.
func uncovered(all, have []string) []string {
	var out []string
	for _, n := range all {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// coverage collects the client methods the subtests called. It also
// carries the style the sandboxes of the run answer in.
type coverage struct {
	style sandbox.Style
	mu    sync.Mutex
	used  map[string]bool
}

func newCoverage(style sandbox.Style) *coverage {
	return &coverage{style: style, used: map[string]bool{}}
}

func (c *coverage) mark(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used[name] = true
}

func (c *coverage) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.used))
}

// ---------------------------------------------------------------------------
// The environment: a sandbox, its httptest server and a client.

const (
	sandboxID     = sandbox.DefaultClientID
	sandboxSecret = sandbox.DefaultClientSecret
)

// clockStart is where the fake clock of every environment starts.
var clockStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// fakeClock is the sandbox's clock in most subtests: token expiry,
// date_modified_utc and the rate limit move only when a test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

type envConfig struct {
	realClock     bool
	tokenLifetime time.Duration
	secret        string // the secret the client sends; empty: the right one
	// The credentials the sandbox accepts; empty: its defaults.
	sandboxID, sandboxSecret string
}

type env struct {
	t     *testing.T
	ctx   context.Context
	sb    *sandbox.Server
	srv   *httptest.Server
	url   string
	clock *fakeClock // nil with the real clock
	cov   *coverage
	c     *acs.Client
	// id and secret are the credentials the sandbox accepts.
	id, secret string
}

func newEnv(t *testing.T, cov *coverage, cfg envConfig) *env {
	t.Helper()
	opts := sandbox.Options{TokenLifetime: cfg.tokenLifetime, ClientID: cfg.sandboxID, ClientSecret: cfg.sandboxSecret, Style: cov.style}
	var clock *fakeClock
	if !cfg.realClock {
		clock = &fakeClock{t: clockStart}
		opts.Now = clock.Now
	}
	sb, err := sandbox.New(opts)
	if err != nil {
		t.Fatalf("sandbox.New: %v", err)
	}
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, sb: sb, srv: srv, url: srv.URL, clock: clock, cov: cov, id: sandboxID, secret: sandboxSecret}
	if cfg.sandboxID != "" {
		e.id, e.secret = cfg.sandboxID, cfg.sandboxSecret
	}
	e.c = e.client(cfg.secret)
	return e
}

// fastRetry keeps retries quick; MaxDelay leaves room for a Retry-After of
// one second.
func fastRetry() acs.RetryPolicy {
	return acs.RetryPolicy{MaxAttempts: 3, BaseDelay: 5 * time.Millisecond, MaxDelay: 2 * time.Second}
}

// client returns a new client on the sandbox with its own token cache,
// authenticated with the client credentials grant.
func (e *env) client(secret string, opts ...acs.Option) *acs.Client {
	e.t.Helper()
	if secret == "" {
		secret = e.secret
	}
	return e.credsClient(acs.ClientCredentials{TokenURL: acs.TokenURL(e.url), ClientID: e.id, ClientSecret: secret}, opts...)
}

// credsClient returns a new client on the sandbox authenticated with creds.
func (e *env) credsClient(creds acs.ClientCredentials, opts ...acs.Option) *acs.Client {
	e.t.Helper()
	opts = append([]acs.Option{acs.WithRetryPolicy(fastRetry())}, opts...)
	c, err := acs.NewClient(e.url, creds.HTTPClient(e.srv.Client().Transport), opts...)
	if err != nil {
		e.t.Fatalf("acs.NewClient: %v", err)
	}
	return c
}

// logLen is a mark in the sandbox's request log.
func (e *env) logLen() int { return len(e.sb.Requests()) }

// since returns the requests logged after mark n.
func (e *env) since(n int) []sandbox.Request { return e.sb.Requests()[n:] }

// apiSince returns the /v3 requests logged after mark n.
func (e *env) apiSince(n int) []sandbox.Request {
	return slices.DeleteFunc(e.since(n), func(r sandbox.Request) bool { return !strings.HasPrefix(r.Path, "/v3/") })
}

func showRequests(reqs []sandbox.Request) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "\n\t%s %s %d %s", r.Method, r.Path, r.Status, r.Fault)
	}
	return b.String()
}

// wantRequests fails unless reqs are exactly want, given as "METHOD path
// status [fault]".
func (e *env) wantRequests(what string, reqs []sandbox.Request, want ...string) {
	e.t.Helper()
	got := make([]string, len(reqs))
	for i, r := range reqs {
		got[i] = strings.TrimSpace(fmt.Sprintf("%s %s %d %s", r.Method, r.Path, r.Status, r.Fault))
	}
	if !slices.Equal(got, want) {
		e.t.Errorf("%s: sandbox saw%s\nwant\n\t%s", what, showRequests(reqs), strings.Join(want, "\n\t"))
	}
}

func (e *env) counts(what string, want map[string]int) {
	e.t.Helper()
	got := e.sb.Counts()
	for k, n := range want {
		if got[k] != n {
			e.t.Errorf("%s: sandbox holds %d %s, want %d (all counts %v)", what, got[k], k, n, got)
		}
	}
}

// ---------------------------------------------------------------------------
// Calling the client: each helper marks the method as covered.

// result is what a client method returned, but the *acs.Response.
type result[T any] struct {
	v   T
	err error
}

// need captures a method's three results.
func need[T any](v T, _ *acs.Response, err error) result[T] { return result[T]{v, err} }

// done captures the two results of a delete or membership change.
func done(_ *acs.Response, err error) result[struct{}] { return result[struct{}]{err: err} }

// must marks name as covered and returns the value, failing the test now on
// an error.
func must[T any](e *env, name string, r result[T]) T {
	e.t.Helper()
	e.cov.mark(name)
	if r.err != nil {
		e.t.Fatalf("%s: %v", name, r.err)
	}
	return r.v
}

// fails marks name as covered and checks that the call failed with an
// error matching want; it returns the *acs.Error, if the error is one.
func fails[T any](e *env, name string, r result[T], want error) *acs.Error {
	e.t.Helper()
	e.cov.mark(name)
	if r.err == nil {
		b, _ := json.Marshal(r.v)
		e.t.Errorf("%s: succeeded with %s, want an error matching %v", name, b, want)
		return nil
	}
	if !errors.Is(r.err, want) {
		e.t.Errorf("%s: error %v does not match %v", name, r.err, want)
	}
	var ae *acs.Error
	if errors.As(r.err, &ae) {
		return ae
	}
	return nil
}

// collect marks name as covered and gathers what the iterator yields,
// failing the test now on an error.
func collect[T any](e *env, name string, seq iter.Seq2[T, error]) []T {
	e.t.Helper()
	e.cov.mark(name)
	var out []T
	for v, err := range seq {
		if err != nil {
			e.t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

// apiError checks that err is an *acs.Error with status and field (empty:
// any field).
func apiError(t *testing.T, what string, err error, status int, field string) *acs.Error {
	t.Helper()
	var ae *acs.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: error %v (%T) is not an *acs.Error", what, err, err)
		return nil
	}
	if ae.Status != status {
		t.Errorf("%s: status %d, want %d (%v)", what, ae.Status, status, ae)
	}
	if field != "" && ae.Field != field {
		t.Errorf("%s: field %q, want %q (%v)", what, ae.Field, field, ae)
	}
	return ae
}

// ---------------------------------------------------------------------------
// Comparing values.

func ts(t *testing.T, s string) *acs.Timestamp {
	t.Helper()
	v, err := acs.ParseTimestamp(s)
	if err != nil {
		t.Fatalf("ParseTimestamp(%q): %v", s, err)
	}
	return &v
}

func idsOf[T any](items []T, id func(T) int64) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func contentIDs(items []*acs.Content) []int64 {
	return idsOf(items, func(c *acs.Content) int64 { return c.ID })
}

func wantIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s: ids %v, want %v", what, got, want)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

// sameJSON compares two values by their JSON, which shows timestamps
// exactly as they travel.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

// convert re-reads v's JSON as a T: a request becomes the resource it
// should create.
func convert[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	if err := json.Unmarshal([]byte(jsonOf(t, v)), &out); err != nil {
		t.Fatalf("convert %T: %v", v, err)
	}
	return out
}

// overlay returns base with the fields of upd (but its id) laid over it:
// what a PUT that merges should leave.
func overlay[T any](t *testing.T, base T, upd any) T {
	t.Helper()
	var m, u map[string]json.RawMessage
	if err := json.Unmarshal([]byte(jsonOf(t, base)), &m); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(jsonOf(t, upd)), &u); err != nil {
		t.Fatal(err)
	}
	delete(u, "id")
	maps.Copy(m, u)
	return convert[T](t, m)
}

func rawFields(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("raw %s: %v", raw, err)
	}
	return m
}

// selfLink is where the sandbox's self links point.
func (e *env) selfLink(target string, id int64) string {
	return e.url + "/v3/" + target + "/" + strconv.FormatInt(id, 10)
}

// normalContent checks the self links of c (content, categories, segments)
// and returns a copy without the self links of refs, whose targets the spec
// does not define, for comparison with what was sent.
func (e *env) normalContent(what string, c *acs.Content) acs.Content {
	e.t.Helper()
	if c == nil {
		e.t.Fatalf("%s: nil content", what)
	}
	if want := e.selfLink("content", c.ID); c.Self != want {
		e.t.Errorf("%s: self %q, want %q", what, c.Self, want)
	}
	out := *c
	strip := func(r *acs.Ref) *acs.Ref {
		if r == nil {
			return nil
		}
		if r.Self == "" {
			e.t.Errorf("%s: ref %d has no self link", what, r.ID)
		}
		return &acs.Ref{ID: r.ID}
	}
	refs := func(field, target string, in []acs.Ref) []acs.Ref {
		if in == nil {
			return nil
		}
		o := make([]acs.Ref, len(in))
		for i, r := range in {
			if want := e.selfLink(target, r.ID); r.Self != want {
				e.t.Errorf("%s: %s[%d].self %q, want %q", what, field, i, r.Self, want)
			}
			o[i] = acs.Ref{ID: r.ID}
		}
		return o
	}
	out.Author, out.Priority, out.Status, out.EventTimeZone = strip(c.Author), strip(c.Priority), strip(c.Status), strip(c.EventTimeZone)
	out.Categories = refs("categories", "category", c.Categories)
	out.Segments = refs("segments", "segment", c.Segments)
	return out
}

// ---------------------------------------------------------------------------
// Content.

// contentCase is one content type's create, update and delete, with the
// expected reads.
type contentCase struct {
	typ     string
	service string
	create  func() (*acs.Content, any, error) // answer, request, error
	update  func(id int64) (*acs.Content, any, error)
	delete  func(id int64) error
}

func testContentPerType(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	cat1 := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: "Campus"})))
	cat2 := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: "Research"})))
	seg := must(e, "Segments.Create", need(e.c.Segments.Create(ctx, &acs.SegmentCreate{Description: "Staff"})))

	cases := []contentCase{
		{
			typ: acs.TypeStory, service: "Stories",
			create: func() (*acs.Content, any, error) {
				req := &acs.StoryCreate{
					Author:               &acs.Ref{ID: 7},
					Title:                acs.Ptr("Canteen reopens"),
					Summary:              acs.Ptr("New menu & longer hours"),
					Body:                 acs.Ptr(`<p>The canteen <b>reopens</b> on "Monday".</p>`),
					MoreButtonText:       acs.Ptr("Read more"),
					ImageURL:             acs.Ptr("https://img.example.com/canteen.jpg"),
					Categories:           []acs.Ref{{ID: cat1.ID}, {ID: cat2.ID}},
					ExternalID:           acs.Ptr("feed-1:story"),
					Priority:             &acs.Ref{ID: 2},
					PriorityUntilDateUTC: ts(t, "2026-02-01 00:00:00"),
					PublishDateUTC:       ts(t, "2026-01-05 08:30:15"),
					ExpirationDateUTC:    ts(t, "2026-12-31 23:59:59"),
					Private:              acs.Ptr(false),
					Segments:             []acs.Ref{{ID: seg.ID}},
					ExclusiveToSegment:   acs.Ptr(true),
					AvailableInPartner:   acs.Ptr(true),
					EnableComments:       acs.Ptr(true),
					EnableLinkTracking:   acs.Ptr(false),
					Status:               &acs.Ref{ID: 3},
					Evergreen:            acs.Ptr(true),
				}
				c, _, err := e.c.Stories.Create(ctx, req)
				return c, req, err
			},
			update: func(id int64) (*acs.Content, any, error) {
				req := &acs.StoryUpdate{
					Title:          acs.Ptr("Canteen reopens on Tuesday"),
					Categories:     []acs.Ref{{ID: cat2.ID}},
					PublishDateUTC: ts(t, "2026-01-06 07:00:01"),
					Evergreen:      acs.Ptr(false),
					Segments:       []acs.Ref{}, // sent as []: clears them
				}
				c, _, err := e.c.Stories.Update(ctx, id, req)
				return c, req, err
			},
			delete: func(id int64) error { _, err := e.c.Stories.Delete(ctx, id); return err },
		},
		{
			typ: acs.TypeEvent, service: "Events",
			create: func() (*acs.Content, any, error) {
				req := &acs.EventCreate{
					Author:                &acs.Ref{ID: 8},
					Title:                 acs.Ptr("Open day"),
					Summary:               acs.Ptr("Labs open to all"),
					Body:                  acs.Ptr("<p>Come and see.</p>"),
					MoreButtonText:        acs.Ptr("Register"),
					ImageURL:              acs.Ptr("https://img.example.com/open.png"),
					Categories:            []acs.Ref{{ID: cat2.ID}},
					ExternalID:            acs.Ptr("feed-1:event"),
					Priority:              &acs.Ref{ID: 1},
					PriorityUntilDateUTC:  ts(t, "2026-03-01 12:00:00"),
					Private:               acs.Ptr(true),
					Segments:              []acs.Ref{{ID: seg.ID}},
					ExclusiveToSegment:    acs.Ptr(false),
					AvailableInPartner:    acs.Ptr(false),
					EnableComments:        acs.Ptr(false),
					EnableLinkTracking:    acs.Ptr(true),
					Status:                &acs.Ref{ID: 1},
					ExternalURL:           acs.Ptr("https://events.example.com/open-day"),
					EventLocation:         acs.Ptr("Main hall"),
					EventStreetAddress:    acs.Ptr("1 University Road"),
					EventCity:             acs.Ptr("Springfield"),
					EventPostalCode:       acs.Ptr("12345"),
					EventRegion:           acs.Ptr("North"),
					EventCountry:          acs.Ptr("US"),
					EventAllDay:           acs.Ptr(false),
					EventStartDateTimeUTC: ts(t, "2026-03-10 14:00:00"),
					EventEndDateTimeUTC:   ts(t, "2026-03-10 17:30:00"),
					EventTimeZone:         &acs.Ref{ID: 5},
					EventRegistrationURL:  acs.Ptr("https://events.example.com/register"),
				}
				c, _, err := e.c.Events.Create(ctx, req)
				return c, req, err
			},
			update: func(id int64) (*acs.Content, any, error) {
				req := &acs.EventUpdate{
					EventCity:             acs.Ptr("Shelbyville"),
					EventAllDay:           acs.Ptr(true),
					EventStartDateTimeUTC: ts(t, "2026-03-11 00:00:00"),
					EventTimeZone:         &acs.Ref{ID: 6},
				}
				c, _, err := e.c.Events.Update(ctx, id, req)
				return c, req, err
			},
			delete: func(id int64) error { _, err := e.c.Events.Delete(ctx, id); return err },
		},
		{
			typ: acs.TypeLink, service: "Links",
			create: func() (*acs.Content, any, error) {
				req := &acs.LinkCreate{
					Title:             acs.Ptr("Library hours"),
					Summary:           acs.Ptr("Opening times"),
					Categories:        []acs.Ref{{ID: cat1.ID}},
					ExternalID:        acs.Ptr("feed-2:link"),
					PublishDateUTC:    ts(t, "2026-01-02 00:00:00"),
					ExpirationDateUTC: ts(t, "2027-01-02 00:00:00"),
					Evergreen:         acs.Ptr(false),
					ExternalURL:       acs.Ptr("https://library.example.com/hours?week=1&lang=en"),
				}
				c, _, err := e.c.Links.Create(ctx, req)
				return c, req, err
			},
			update: func(id int64) (*acs.Content, any, error) {
				req := &acs.LinkUpdate{
					ExternalURL:       acs.Ptr("https://library.example.com/hours?week=2"),
					ExpirationDateUTC: ts(t, "2027-06-30 18:45:59"),
					Evergreen:         acs.Ptr(true),
				}
				c, _, err := e.c.Links.Update(ctx, id, req)
				return c, req, err
			},
			delete: func(id int64) error { _, err := e.c.Links.Delete(ctx, id); return err },
		},
		{
			typ: acs.TypeNeed, service: "Needs",
			create: func() (*acs.Content, any, error) {
				req := &acs.NeedCreate{
					Author:         &acs.IDRef{ID: 9},
					Title:          acs.Ptr("Volunteers for the fair"),
					Body:           acs.Ptr("We need helpers."),
					Categories:     []acs.Ref{{ID: cat1.ID}},
					ExternalID:     acs.Ptr("feed-3:need"),
					PublishDateUTC: ts(t, "2026-01-04 10:00:00"),
					NeedQuantity:   acs.Ptr(int64(12)),
					NeedByDateUTC:  ts(t, "2026-04-01 09:00:00"),
				}
				c, _, err := e.c.Needs.Create(ctx, req)
				return c, req, err
			},
			update: func(id int64) (*acs.Content, any, error) {
				req := &acs.NeedUpdate{
					Author:      &acs.Ref{ID: 10},
					Title:       acs.Ptr("Volunteers for the spring fair"),
					ExternalURL: acs.Ptr("https://fair.example.com/volunteer"),
				}
				c, _, err := e.c.Needs.Update(ctx, id, req)
				return c, req, err
			},
			delete: func(id int64) error { _, err := e.c.Needs.Delete(ctx, id); return err },
		},
	}

	created := map[string]acs.Content{} // normalized reads, by type
	for _, tc := range cases {
		got, req, err := tc.create()
		e.cov.mark(tc.service + ".Create")
		if err != nil {
			t.Fatalf("%s.Create: %v", tc.service, err)
		}
		if got.ID <= 0 || got.Type != tc.typ {
			t.Fatalf("%s.Create answered id %d type %q", tc.service, got.ID, got.Type)
		}
		want := convert[acs.Content](t, req)
		want.ID, want.Type, want.Self = got.ID, tc.typ, e.selfLink("content", got.ID)
		sameJSON(t, tc.service+".Create answer", e.normalContent("create", got), want)

		read := must(e, "Content.Get", need(e.c.Content.Get(ctx, got.ID)))
		sameJSON(t, "Content.Get of a new "+tc.typ, e.normalContent("get", read), want)
		created[tc.typ] = want

		items := e.sb.ItemsByExternalID(*want.ExternalID)
		if len(items) != 1 || items[0].ID != got.ID || items[0].Type != tc.typ {
			t.Errorf("sandbox items with external_id %s: %+v, want one %s with id %d", *want.ExternalID, items, tc.typ, got.ID)
		}
	}
	// Timestamps round-trip exactly, to the second and in UTC.
	story := created[acs.TypeStory]
	if story.PublishDateUTC == nil || !story.PublishDateUTC.Equal(time.Date(2026, 1, 5, 8, 30, 15, 0, time.UTC)) {
		t.Errorf("story publish_date_utc read back as %v", story.PublishDateUTC)
	}
	if ev := created[acs.TypeEvent]; ev.EventEndDateTimeUTC == nil || ev.EventEndDateTimeUTC.String() != "2026-03-10 17:30:00" {
		t.Errorf("event_end_date_time_utc read back as %v", ev.EventEndDateTimeUTC)
	}

	// Every piece is listed with its type, and reads the same in a list.
	list := must(e, "Content.List", need(e.c.Content.List(ctx, nil)))
	if len(list) != len(cases) {
		t.Fatalf("Content.List: %d items, want %d", len(list), len(cases))
	}
	for i, c := range list {
		typ := cases[i].typ
		if c.Type != typ {
			t.Errorf("Content.List[%d] type %q, want %q", i, c.Type, typ)
		}
		sameJSON(t, "Content.List item "+typ, e.normalContent("list", c), created[typ])
	}
	all := collect(e, "Content.All", e.c.Content.All(ctx, &acs.ListOptions{PageSize: 3}))
	wantIDs(t, "Content.All", contentIDs(all), contentIDs(list))

	// Update changes the fields sent and keeps the others.
	for _, tc := range cases {
		id := created[tc.typ].ID
		got, req, err := tc.update(id)
		e.cov.mark(tc.service + ".Update")
		if err != nil {
			t.Fatalf("%s.Update: %v", tc.service, err)
		}
		want := overlay(t, created[tc.typ], req)
		sameJSON(t, tc.service+".Update answer", e.normalContent("update", got), want)
		read := must(e, "Content.Get", need(e.c.Content.Get(ctx, id)))
		sameJSON(t, "Content.Get after "+tc.service+".Update", e.normalContent("get", read), want)
		created[tc.typ] = want
	}
	if s := created[acs.TypeStory]; len(s.Segments) != 0 || len(s.Categories) != 1 {
		t.Errorf("story after update: segments %v (want cleared), categories %v", s.Segments, s.Categories)
	}

	// A per-type path refuses an item of another type.
	storyID, eventID := created[acs.TypeStory].ID, created[acs.TypeEvent].ID
	fails(e, "Events.Delete", done(e.c.Events.Delete(ctx, storyID)), acs.ErrNotFound)
	fails(e, "Stories.Update", need(e.c.Stories.Update(ctx, eventID, &acs.StoryUpdate{Title: acs.Ptr("x")})), acs.ErrNotFound)
	must(e, "Content.Get", need(e.c.Content.Get(ctx, storyID)))

	// Delete removes; the item is then not found by any method.
	for i, tc := range cases {
		id := created[tc.typ].ID
		e.cov.mark(tc.service + ".Delete")
		if err := tc.delete(id); err != nil {
			t.Fatalf("%s.Delete: %v", tc.service, err)
		}
		fails(e, "Content.Get", need(e.c.Content.Get(ctx, id)), acs.ErrNotFound)
		if err := tc.delete(id); !errors.Is(err, acs.ErrNotFound) {
			t.Errorf("%s.Delete twice: %v, want ErrNotFound", tc.service, err)
		}
		_, _, err := tc.update(id)
		if !errors.Is(err, acs.ErrNotFound) {
			t.Errorf("%s.Update of a deleted item: %v, want ErrNotFound", tc.service, err)
		}
		left := must(e, "Content.List", need(e.c.Content.List(ctx, nil)))
		if len(left) != len(cases)-i-1 || slices.Contains(contentIDs(left), id) {
			t.Errorf("after deleting %s %d, Content.List has %v", tc.typ, id, contentIDs(left))
		}
	}
	e.counts("after deleting everything", map[string]int{"story": 0, "event": 0, "link": 0, "need": 0, "category": 2, "segment": 1})
}

func testContentFilters(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	day := func(d int) *acs.Timestamp {
		v := acs.NewTimestamp(time.Date(2026, 1, d, 12, 0, 0, 0, time.UTC))
		return &v
	}
	var ids []int64
	for i := 1; i <= 5; i++ { // stories 1-5: feed:1..5, published Jan 1-5
		c := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{
			Title: acs.Ptr(fmt.Sprintf("Story %d", i)), ExternalID: acs.Ptr(fmt.Sprintf("feed:%d", i)), PublishDateUTC: day(i),
		})))
		ids = append(ids, c.ID)
	}
	ev := must(e, "Events.Create", need(e.c.Events.Create(ctx, &acs.EventCreate{Title: acs.Ptr("Event"), ExternalID: acs.Ptr("feed:6")})))
	lk := must(e, "Links.Create", need(e.c.Links.Create(ctx, &acs.LinkCreate{Title: acs.Ptr("Link"), PublishDateUTC: day(7)})))
	ids = append(ids, ev.ID, lk.ID)
	s1, s2, s3, s4, s5, e6, l7 := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]

	f := acs.Filter{}
	cases := []struct {
		name   string
		filter acs.Filter
		want   []int64
	}{
		{"eq external_id", f.Eq("external_id", "feed:3"), []int64{s3}},
		{"eq external_id, no match", f.Eq("external_id", "feed:99"), nil},
		// SQL-like: an item without external_id is neither equal nor unequal.
		{"neq external_id", f.Neq("external_id", "feed:3"), []int64{s1, s2, s4, s5, e6}},
		{"in external_id", f.In("external_id", "feed:1", "feed:5", "feed:6", "feed:99"), []int64{s1, s5, e6}},
		{"isnull external_id", f.IsNull("external_id", true), []int64{l7}},
		{"is not null external_id", f.IsNull("external_id", false), []int64{s1, s2, s3, s4, s5, e6}},
		{"lt publish_date_utc", f.Lt("publish_date_utc", *day(3)), []int64{s1, s2}},
		{"lte publish_date_utc", f.Lte("publish_date_utc", *day(3)), []int64{s1, s2, s3}},
		{"gt publish_date_utc", f.Gt("publish_date_utc", *day(4)), []int64{s5, l7}},
		{"gte publish_date_utc as time.Time", f.Gte("publish_date_utc", time.Date(2026, 1, 4, 13, 0, 0, 0, time.FixedZone("CET", 3600))), []int64{s4, s5, l7}},
		{"isnull publish_date_utc", f.IsNull("publish_date_utc", true), []int64{e6}},
		{"in publish_date_utc", f.In("publish_date_utc", *day(2), *day(7)), []int64{s2, l7}},
		{"two fields", f.In("external_id", "feed:1", "feed:4", "feed:5").Gt("publish_date_utc", *day(4)), []int64{s5}},
	}
	for _, tc := range cases {
		got, resp, err := e.c.Content.List(ctx, &acs.ListOptions{Filter: tc.filter})
		e.cov.mark("Content.List")
		if err != nil {
			t.Errorf("%s (%s): %v", tc.name, tc.filter, err)
			continue
		}
		wantIDs(t, tc.name+" "+tc.filter.String(), contentIDs(got), tc.want)
		if resp.Total != len(tc.want) {
			t.Errorf("%s: total %d, want %d", tc.name, resp.Total, len(tc.want))
		}
	}

	// One page, then the iterator over several pages.
	page, resp, err := e.c.Content.List(ctx, &acs.ListOptions{Page: 2, PageSize: 3})
	if err != nil {
		t.Fatalf("Content.List page 2: %v", err)
	}
	wantIDs(t, "Content.List page 2 of 3", contentIDs(page), []int64{s4, s5, e6})
	if resp.Page != 2 || resp.PageSize != 3 || resp.Total != 7 {
		t.Errorf("Content.List page 2: page %d page_size %d total %d, want 2, 3, 7", resp.Page, resp.PageSize, resp.Total)
	}

	n := e.logLen()
	all := collect(e, "Content.All", e.c.Content.All(ctx, &acs.ListOptions{PageSize: 2}))
	wantIDs(t, "Content.All by 2", contentIDs(all), ids)
	e.wantRequests("Content.All by 2 walks 4 pages, the last short", e.apiSince(n),
		"GET /v3/content 200", "GET /v3/content 200", "GET /v3/content 200", "GET /v3/content 200")

	n = e.logLen()
	all = collect(e, "Content.All", e.c.Content.All(ctx, &acs.ListOptions{PageSize: 2, Filter: f.Neq("external_id", "feed:3")}))
	wantIDs(t, "Content.All by 2 with a filter", contentIDs(all), []int64{s1, s2, s4, s5, e6})
	if got := len(e.apiSince(n)); got != 3 {
		t.Errorf("Content.All of 5 filtered items by 2: %d requests, want 3", got)
	}

	n = e.logLen()
	all = collect(e, "Content.All", e.c.Content.All(ctx, &acs.ListOptions{Page: 2, PageSize: 3}))
	wantIDs(t, "Content.All from page 2", contentIDs(all), []int64{s4, s5, e6, l7})
	if got := len(e.apiSince(n)); got != 2 {
		t.Errorf("Content.All from page 2 of 3: %d requests, want 2", got)
	}

	// An exact multiple of the page size ends on an empty page.
	n = e.logLen()
	all = collect(e, "Content.All", e.c.Content.All(ctx, &acs.ListOptions{PageSize: 2, Filter: f.IsNull("publish_date_utc", false)}))
	if len(all) != 6 || len(e.apiSince(n)) != 4 {
		t.Errorf("Content.All of 6 items by 2: %d items in %d requests, want 6 in 4", len(all), len(e.apiSince(n)))
	}

	// Stopping early sends no further request.
	n = e.logLen()
	var seen []int64
	for c, err := range e.c.Content.All(ctx, &acs.ListOptions{PageSize: 2}) {
		if err != nil {
			t.Fatalf("Content.All: %v", err)
		}
		if seen = append(seen, c.ID); len(seen) == 3 {
			break
		}
	}
	if len(e.apiSince(n)) != 2 {
		t.Errorf("breaking after 3 items of pages of 2: %d requests, want 2", len(e.apiSince(n)))
	}

	// The iterator stops at the first error and yields it.
	var errs, items int
	for _, err := range e.c.Content.All(ctx, &acs.ListOptions{PageSize: sandbox.MaxPageSize + 1}) {
		if err != nil {
			errs++
			apiError(t, "Content.All above the maximum page size", err, http.StatusBadRequest, "page_size")
			continue
		}
		items++
	}
	if errs != 1 || items != 0 {
		t.Errorf("Content.All with a refused page size: %d items, %d errors; want 0 and 1", items, errs)
	}
}

// testContentCreateRef: CreateRef of each type answers the id (and self
// link) that Content.Get then reads, in both sandbox styles.
func testContentCreateRef(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	refs := map[string]*acs.Ref{
		acs.TypeStory: must(e, "Stories.CreateRef", need(e.c.Stories.CreateRef(ctx, &acs.StoryCreate{Title: acs.Ptr("S"), ExternalID: acs.Ptr("ref:s")}))),
		acs.TypeEvent: must(e, "Events.CreateRef", need(e.c.Events.CreateRef(ctx, &acs.EventCreate{Title: acs.Ptr("E"), ExternalID: acs.Ptr("ref:e")}))),
		acs.TypeLink:  must(e, "Links.CreateRef", need(e.c.Links.CreateRef(ctx, &acs.LinkCreate{Title: acs.Ptr("L"), ExternalID: acs.Ptr("ref:l")}))),
		acs.TypeNeed:  must(e, "Needs.CreateRef", need(e.c.Needs.CreateRef(ctx, &acs.NeedCreate{Title: acs.Ptr("N"), ExternalID: acs.Ptr("ref:n")}))),
	}
	for typ, ref := range refs {
		if ref == nil || ref.ID == 0 {
			t.Errorf("%s CreateRef answered %+v, want an id", typ, ref)
			continue
		}
		got := must(e, "Content.Get", need(e.c.Content.Get(ctx, ref.ID)))
		if got == nil || got.Type != typ || got.ExternalID == nil || *got.ExternalID != "ref:"+typ[:1] {
			t.Errorf("Content.Get(%d) = %+v, want the %s just created", ref.ID, got, typ)
			continue
		}
		if ref.Self != got.Self {
			t.Errorf("%s CreateRef self %q, Content.Get self %q", typ, ref.Self, got.Self)
		}
	}
}

func testContentConcurrent(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, _, err := e.c.Stories.Create(e.ctx, &acs.StoryCreate{Title: acs.Ptr("Parallel"), ExternalID: acs.Ptr(fmt.Sprintf("par:%d", i))})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Stories.Create: %v", err)
		}
	}
	e.cov.mark("Stories.Create")
	all := collect(e, "Content.All", e.c.Content.All(e.ctx, &acs.ListOptions{PageSize: 5}))
	ids := contentIDs(all)
	slices.Sort(ids)
	if len(slices.Compact(ids)) != n {
		t.Errorf("after %d concurrent creates, Content.All has ids %v", n, contentIDs(all))
	}
	for i := range n {
		if items := e.sb.ItemsByExternalID(fmt.Sprintf("par:%d", i)); len(items) != 1 {
			t.Errorf("par:%d stored %d times", i, len(items))
		}
	}
}

// ---------------------------------------------------------------------------
// Subscribers, Unsubscribes, Segments, Categories, Blasts, Insights.

func sameSubscriber(t *testing.T, what string, got *acs.Subscriber, id int64, first, last, email string, status, privacy int64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil subscriber", what)
		return
	}
	if got.ID != id || got.FirstName != first || got.LastName != last || got.Email != email ||
		got.SubscriberStatus == nil || got.SubscriberStatus.ID != status ||
		got.SubscriberPrivacyLevel == nil || got.SubscriberPrivacyLevel.ID != privacy {
		t.Errorf("%s: got %s, want id %d %s %s <%s> status %d privacy %d", what, got.Raw, id, first, last, email, status, privacy)
	}
}

func subscriberIDs(items []*acs.Subscriber) []int64 {
	return idsOf(items, func(s *acs.Subscriber) int64 { return s.ID })
}

func testSubscribers(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	people := []acs.SubscriberCreate{
		{FirstName: "Ann", LastName: "Lee", Email: "ann@example.com", SubscriberStatus: acs.IDRef{ID: acs.SubscriberStatusBlastsAndDigests}, SubscriberPrivacyLevel: acs.IDRef{ID: acs.PrivacyPersonalize}},
		{FirstName: "Bob", LastName: "Ng", Email: "bob@example.com", SubscriberStatus: acs.IDRef{ID: acs.SubscriberStatusDigests}, SubscriberPrivacyLevel: acs.IDRef{ID: acs.PrivacyPersonalizeNoReporting}},
		{FirstName: "Cy", LastName: "Ito", Email: "cy@example.com", SubscriberStatus: acs.IDRef{ID: acs.SubscriberStatusBlasts}, SubscriberPrivacyLevel: acs.IDRef{ID: acs.PrivacyNoPersonalization}},
	}
	var ids []int64
	for _, p := range people {
		s := must(e, "Subscribers.Create", need(e.c.Subscribers.Create(ctx, &p)))
		sameSubscriber(t, "Subscribers.Create answer", s, s.ID, p.FirstName, p.LastName, p.Email, p.SubscriberStatus.ID, p.SubscriberPrivacyLevel.ID)
		got := must(e, "Subscribers.Get", need(e.c.Subscribers.Get(ctx, s.ID)))
		sameSubscriber(t, "Subscribers.Get", got, s.ID, p.FirstName, p.LastName, p.Email, p.SubscriberStatus.ID, p.SubscriberPrivacyLevel.ID)
		ids = append(ids, s.ID)
	}
	ann, bob, cy := ids[0], ids[1], ids[2]

	page, resp, err := e.c.Subscribers.List(ctx, &acs.ListOptions{PageSize: 2})
	e.cov.mark("Subscribers.List")
	if err != nil {
		t.Fatalf("Subscribers.List: %v", err)
	}
	wantIDs(t, "Subscribers.List page 1 by 2", subscriberIDs(page), []int64{ann, bob})
	if resp.Total != 3 {
		t.Errorf("Subscribers.List total %d, want 3", resp.Total)
	}
	n := e.logLen()
	all := collect(e, "Subscribers.All", e.c.Subscribers.All(ctx, &acs.ListOptions{PageSize: 2}))
	wantIDs(t, "Subscribers.All by 2", subscriberIDs(all), ids)
	if len(e.apiSince(n)) != 2 {
		t.Errorf("Subscribers.All of 3 by 2: %d requests, want 2", len(e.apiSince(n)))
	}
	byEmail := must(e, "Subscribers.List", need(e.c.Subscribers.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("email", "bob@example.com")})))
	wantIDs(t, "Subscribers.List by email", subscriberIDs(byEmail), []int64{bob})

	// Update changes the fields sent and keeps the others.
	upd := must(e, "Subscribers.Update", need(e.c.Subscribers.Update(ctx, ann, &acs.SubscriberUpdate{
		FirstName: acs.Ptr("Anne"), SubscriberStatus: acs.IDRef{ID: acs.SubscriberStatusBlasts}, SubscriberPrivacyLevel: acs.IDRef{ID: acs.PrivacyNoPersonalization},
	})))
	sameSubscriber(t, "Subscribers.Update answer", upd, ann, "Anne", "Lee", "ann@example.com", 2, 3)
	sameSubscriber(t, "Subscribers.Get after update", must(e, "Subscribers.Get", need(e.c.Subscribers.Get(ctx, ann))), ann, "Anne", "Lee", "ann@example.com", 2, 3)
	fails(e, "Subscribers.Get", need(e.c.Subscribers.Get(ctx, 999)), acs.ErrNotFound)

	// Interests rank the Categories of the content Ann can see.
	catA := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: "Sports"})))
	catB := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: "Arts"})))
	for _, cats := range [][]acs.Ref{{{ID: catA.ID}}, {{ID: catA.ID}, {ID: catB.ID}}} {
		must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Match report"), Categories: cats})))
	}
	interests := must(e, "Subscribers.Interests", need(e.c.Subscribers.Interests(ctx, ann)))
	if len(interests) != 2 || interests[0].ID != catA.ID || interests[0].Description != "Sports" || interests[1].ID != catB.ID || interests[1].Description != "Arts" {
		t.Errorf("Subscribers.Interests = %s, want Sports (%d) then Arts (%d)", jsonOf(t, interests), catA.ID, catB.ID)
	}
	fails(e, "Subscribers.Interests", need(e.c.Subscribers.Interests(ctx, 999)), acs.ErrNotFound)

	// Unsubscribe with termination data: same id, data kept, gone from
	// /v3/subscriber.
	seg := must(e, "Segments.Create", need(e.c.Segments.Create(ctx, &acs.SegmentCreate{Description: "Alumni"})))
	must(e, "Segments.AddSubscriber", done(e.c.Segments.AddSubscriber(ctx, seg.ID, bob)))
	term := ts(t, "2026-01-31 17:00:00")
	u := must(e, "Subscribers.Unsubscribe", need(e.c.Subscribers.Unsubscribe(ctx, bob, &acs.UnsubscribeRequest{
		TerminationDateUTC: term, TerminationVoluntary: acs.Ptr(false), DepartureCode: &acs.IDRef{ID: acs.DepartureCodeRetired},
	})))
	checkUnsubscribe := func(what string, u *acs.Unsubscribe) {
		t.Helper()
		if u == nil || u.ID != bob {
			t.Fatalf("%s: %+v, want the id %d Bob had", what, u, bob)
		}
		var m struct {
			TerminationDateUTC   acs.Timestamp `json:"termination_date_utc"`
			TerminationVoluntary *bool         `json:"termination_voluntary"`
			DepartureCode        acs.IDRef     `json:"departure_code"`
			SubscriberStatus     acs.IDRef     `json:"subscriber_status"`
			Email                string        `json:"email"`
		}
		if err := acs.DecodeRaw(u.Raw, &m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if m.TerminationDateUTC.String() != "2026-01-31 17:00:00" || m.TerminationVoluntary == nil || *m.TerminationVoluntary ||
			m.DepartureCode.ID != 6 || m.SubscriberStatus.ID != acs.SubscriberStatusUnsubscribed || m.Email != "bob@example.com" {
			t.Errorf("%s: %s, want termination 2026-01-31 17:00:00, involuntary, departure code 6, status 1, bob's e-mail", what, u.Raw)
		}
	}
	checkUnsubscribe("Subscribers.Unsubscribe answer", u)
	checkUnsubscribe("Unsubscribes.Get", must(e, "Unsubscribes.Get", need(e.c.Unsubscribes.Get(ctx, bob))))
	fails(e, "Subscribers.Get", need(e.c.Subscribers.Get(ctx, bob)), acs.ErrNotFound)
	fails(e, "Subscribers.Update", need(e.c.Subscribers.Update(ctx, bob, &acs.SubscriberUpdate{
		SubscriberStatus: acs.IDRef{ID: 4}, SubscriberPrivacyLevel: acs.IDRef{ID: 1},
	})), acs.ErrNotFound)
	fails(e, "Subscribers.Unsubscribe", need(e.c.Subscribers.Unsubscribe(ctx, bob, nil)), acs.ErrNotFound)
	wantIDs(t, "Subscribers.List after unsubscribe", subscriberIDs(must(e, "Subscribers.List", need(e.c.Subscribers.List(ctx, nil)))), []int64{ann, cy})
	members := must(e, "Segments.ListSubscribers", need(e.c.Segments.ListSubscribers(ctx, seg.ID)))
	if len(members) != 0 {
		t.Errorf("segment still lists unsubscribed subscribers %v", subscriberIDs(members))
	}

	// Unsubscribe without a body.
	uc := must(e, "Subscribers.Unsubscribe", need(e.c.Subscribers.Unsubscribe(ctx, cy, nil)))
	if uc == nil || uc.ID != cy {
		t.Errorf("Subscribers.Unsubscribe(nil) = %+v, want id %d", uc, cy)
	} else if m := rawFields(t, uc.Raw); m["departure_code"] != nil || m["termination_date_utc"] != nil {
		t.Errorf("Unsubscribe without a body recorded termination data: %s", uc.Raw)
	}

	unsubIDs := func(items []*acs.Unsubscribe) []int64 {
		return idsOf(items, func(u *acs.Unsubscribe) int64 { return u.ID })
	}
	wantIDs(t, "Unsubscribes.List", unsubIDs(must(e, "Unsubscribes.List", need(e.c.Unsubscribes.List(ctx, nil)))), []int64{bob, cy})
	wantIDs(t, "Unsubscribes.List by termination_date_utc", unsubIDs(must(e, "Unsubscribes.List", need(e.c.Unsubscribes.List(ctx,
		&acs.ListOptions{Filter: acs.Filter{}.Eq("termination_date_utc", *term)})))), []int64{bob})
	n = e.logLen()
	wantIDs(t, "Unsubscribes.All by 1", unsubIDs(collect(e, "Unsubscribes.All", e.c.Unsubscribes.All(ctx, &acs.ListOptions{PageSize: 1}))), []int64{bob, cy})
	if len(e.apiSince(n)) != 3 {
		t.Errorf("Unsubscribes.All of 2 by 1: %d requests, want 3", len(e.apiSince(n)))
	}
	fails(e, "Unsubscribes.Get", need(e.c.Unsubscribes.Get(ctx, ann)), acs.ErrNotFound)
	e.counts("end", map[string]int{"subscriber": 1, "unsubscribe": 2})
}

func segmentIDs(items []*acs.Segment) []int64 {
	return idsOf(items, func(s *acs.Segment) int64 { return s.ID })
}

func testSegments(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	// Three Segments a minute apart on the sandbox's clock.
	var segs []*acs.Segment
	var times []acs.Timestamp
	for i, req := range []acs.SegmentCreate{
		{Description: "Faculty"},
		{Description: "Students"},
		{Description: "Alumni", ExternalID: acs.Ptr("crm:alumni")},
	} {
		if i > 0 {
			e.clock.Advance(time.Minute)
		}
		s := must(e, "Segments.Create", need(e.c.Segments.Create(ctx, &req)))
		now := acs.NewTimestamp(e.clock.Now())
		if s.ID <= 0 || s.Description != req.Description || !reflect.DeepEqual(s.ExternalID, req.ExternalID) ||
			s.DateModifiedUTC == nil || !s.DateModifiedUTC.Equal(now.Time) {
			t.Errorf("Segments.Create answer %s, want %q external_id %v modified %s", jsonOf(t, s), req.Description, req.ExternalID, now)
		}
		sameJSON(t, "Segments.Get", must(e, "Segments.Get", need(e.c.Segments.Get(ctx, s.ID))), s)
		segs, times = append(segs, s), append(times, now)
	}
	fac, stu, alu := segs[0].ID, segs[1].ID, segs[2].ID

	list := must(e, "Segments.List", need(e.c.Segments.List(ctx, nil)))
	sameJSON(t, "Segments.List", list, segs)
	wantIDs(t, "Segments.All by 2", segmentIDs(collect(e, "Segments.All", e.c.Segments.All(ctx, &acs.ListOptions{PageSize: 2}))), []int64{fac, stu, alu})

	f := acs.Filter{}
	for _, tc := range []struct {
		name   string
		filter acs.Filter
		want   []int64
	}{
		{"date_modified_utc eq", f.Eq("date_modified_utc", times[1]), []int64{stu}},
		{"date_modified_utc neq", f.Neq("date_modified_utc", times[1]), []int64{fac, alu}},
		{"date_modified_utc gt", f.Gt("date_modified_utc", times[0]), []int64{stu, alu}},
		{"date_modified_utc gte", f.Gte("date_modified_utc", times[1]), []int64{stu, alu}},
		{"date_modified_utc lt", f.Lt("date_modified_utc", times[1]), []int64{fac}},
		{"date_modified_utc lte", f.Lte("date_modified_utc", times[1].Time), []int64{fac, stu}},
		{"date_modified_utc in", f.In("date_modified_utc", times[0], times[2]), []int64{fac, alu}},
		{"external_id eq", f.Eq("external_id", "crm:alumni"), []int64{alu}},
		{"external_id isnull", f.IsNull("external_id", true), []int64{fac, stu}},
	} {
		got := must(e, "Segments.List", need(e.c.Segments.List(ctx, &acs.ListOptions{Filter: tc.filter})))
		wantIDs(t, "Segments.List "+tc.name+" "+tc.filter.String(), segmentIDs(got), tc.want)
	}

	// Update changes the fields sent and date_modified_utc.
	later := acs.NewTimestamp(e.clock.Advance(time.Hour))
	upd := must(e, "Segments.Update", need(e.c.Segments.Update(ctx, fac, &acs.SegmentUpdate{Description: acs.Ptr("Faculty and staff"), ExternalID: acs.Ptr("crm:faculty")})))
	want := acs.Segment{ID: fac, Description: "Faculty and staff", ExternalID: acs.Ptr("crm:faculty"), DateModifiedUTC: &later}
	sameJSON(t, "Segments.Update answer", upd, want)
	sameJSON(t, "Segments.Get after update", must(e, "Segments.Get", need(e.c.Segments.Get(ctx, fac))), want)
	upd = must(e, "Segments.Update", need(e.c.Segments.Update(ctx, stu, &acs.SegmentUpdate{ExternalID: acs.Ptr("crm:students")})))
	if upd.Description != "Students" || upd.ExternalID == nil || *upd.ExternalID != "crm:students" {
		t.Errorf("Segments.Update of external_id only: %s, want the description kept", jsonOf(t, upd))
	}
	fails(e, "Segments.Update", need(e.c.Segments.Update(ctx, 999, &acs.SegmentUpdate{Description: acs.Ptr("x")})), acs.ErrNotFound)

	// Membership: one Subscriber per add.
	var subs []int64
	for _, name := range []string{"dee", "eve"} {
		s := must(e, "Subscribers.Create", need(e.c.Subscribers.Create(ctx, &acs.SubscriberCreate{
			FirstName: name, LastName: "Doe", Email: name + "@example.com",
			SubscriberStatus: acs.IDRef{ID: 4}, SubscriberPrivacyLevel: acs.IDRef{ID: 1},
		})))
		subs = append(subs, s.ID)
	}
	dee, eve := subs[0], subs[1]
	n := e.logLen()
	must(e, "Segments.AddSubscriber", done(e.c.Segments.AddSubscriber(ctx, stu, dee)))
	must(e, "Segments.AddSubscriber", done(e.c.Segments.AddSubscriber(ctx, stu, eve)))
	must(e, "Segments.AddSubscriber", done(e.c.Segments.AddSubscriber(ctx, stu, dee))) // twice is harmless
	must(e, "Segments.AddSubscriber", done(e.c.Segments.AddSubscriber(ctx, alu, dee)))
	e.wantRequests("AddSubscriber sends one request per subscriber", e.apiSince(n),
		fmt.Sprintf("POST /v3/segment/%d/subscriber 200", stu), fmt.Sprintf("POST /v3/segment/%d/subscriber 200", stu),
		fmt.Sprintf("POST /v3/segment/%d/subscriber 200", stu), fmt.Sprintf("POST /v3/segment/%d/subscriber 200", alu))
	members := must(e, "Segments.ListSubscribers", need(e.c.Segments.ListSubscribers(ctx, stu)))
	wantIDs(t, "Segments.ListSubscribers", subscriberIDs(members), []int64{dee, eve})
	sameSubscriber(t, "Segments.ListSubscribers[0]", members[0], dee, "dee", "Doe", "dee@example.com", 4, 1)
	segRefs := func(id int64) []int64 {
		t.Helper()
		s := must(e, "Subscribers.Get", need(e.c.Subscribers.Get(ctx, id)))
		var v struct{ Segments []acs.Ref }
		if err := acs.DecodeRaw(s.Raw, &v); err != nil {
			t.Fatalf("subscriber %d: %v", id, err)
		}
		return idsOf(v.Segments, func(r acs.Ref) int64 { return r.ID })
	}
	wantIDs(t, "dee's segments", segRefs(dee), []int64{stu, alu})

	must(e, "Segments.RemoveSubscriber", done(e.c.Segments.RemoveSubscriber(ctx, stu, dee)))
	wantIDs(t, "Segments.ListSubscribers after remove", subscriberIDs(must(e, "Segments.ListSubscribers", need(e.c.Segments.ListSubscribers(ctx, stu)))), []int64{eve})
	fails(e, "Segments.RemoveSubscriber", done(e.c.Segments.RemoveSubscriber(ctx, stu, dee)), acs.ErrNotFound)
	fails(e, "Segments.AddSubscriber", done(e.c.Segments.AddSubscriber(ctx, 999, dee)), acs.ErrNotFound)
	fails(e, "Segments.ListSubscribers", need(e.c.Segments.ListSubscribers(ctx, 999)), acs.ErrNotFound)

	// Deleting a Segment keeps its Subscribers.
	must(e, "Segments.Delete", done(e.c.Segments.Delete(ctx, stu)))
	fails(e, "Segments.Get", need(e.c.Segments.Get(ctx, stu)), acs.ErrNotFound)
	fails(e, "Segments.Delete", done(e.c.Segments.Delete(ctx, stu)), acs.ErrNotFound)
	fails(e, "Segments.ListSubscribers", need(e.c.Segments.ListSubscribers(ctx, stu)), acs.ErrNotFound)
	sameSubscriber(t, "eve after her segment was deleted", must(e, "Subscribers.Get", need(e.c.Subscribers.Get(ctx, eve))), eve, "eve", "Doe", "eve@example.com", 4, 1)
	wantIDs(t, "Subscribers.List after the segment was deleted", subscriberIDs(must(e, "Subscribers.List", need(e.c.Subscribers.List(ctx, nil)))), []int64{dee, eve})
	wantIDs(t, "eve's segments", segRefs(eve), nil)
	wantIDs(t, "Segments.List after delete", segmentIDs(must(e, "Segments.List", need(e.c.Segments.List(ctx, nil)))), []int64{fac, alu})
	e.counts("end", map[string]int{"segment": 2, "subscriber": 2})
}

func testCategories(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	var cats []*acs.Category
	for _, d := range []string{"News", "Events", "Jobs"} {
		c := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: d})))
		if c.ID <= 0 || c.Description != d {
			t.Errorf("Categories.Create(%q) = %+v", d, c)
		}
		sameJSON(t, "Categories.Get", must(e, "Categories.Get", need(e.c.Categories.Get(ctx, c.ID))), c)
		cats = append(cats, c)
	}
	catIDs := func(items []*acs.Category) []int64 { return idsOf(items, func(c *acs.Category) int64 { return c.ID }) }
	page, resp, err := e.c.Categories.List(ctx, &acs.ListOptions{Page: 2, PageSize: 2})
	e.cov.mark("Categories.List")
	if err != nil {
		t.Fatalf("Categories.List: %v", err)
	}
	sameJSON(t, "Categories.List page 2 by 2", page, cats[2:])
	if resp.Total != 3 {
		t.Errorf("Categories.List total %d, want 3", resp.Total)
	}
	sameJSON(t, "Categories.All by 2", collect(e, "Categories.All", e.c.Categories.All(ctx, &acs.ListOptions{PageSize: 2})), cats)
	byName := must(e, "Categories.List", need(e.c.Categories.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.In("description", "Jobs", "News")})))
	wantIDs(t, "Categories.List by description", catIDs(byName), []int64{cats[0].ID, cats[2].ID})

	// A Category in use: deleting it removes it from the content.
	story := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Hiring"), Categories: []acs.Ref{{ID: cats[2].ID}, {ID: cats[0].ID}}})))
	must(e, "Categories.Delete", done(e.c.Categories.Delete(ctx, cats[2].ID)))
	fails(e, "Categories.Get", need(e.c.Categories.Get(ctx, cats[2].ID)), acs.ErrNotFound)
	fails(e, "Categories.Delete", done(e.c.Categories.Delete(ctx, cats[2].ID)), acs.ErrNotFound)
	wantIDs(t, "Categories.List after delete", catIDs(must(e, "Categories.List", need(e.c.Categories.List(ctx, nil)))), []int64{cats[0].ID, cats[1].ID})
	got := must(e, "Content.Get", need(e.c.Content.Get(ctx, story.ID)))
	wantIDs(t, "story categories after one was deleted", idsOf(got.Categories, func(r acs.Ref) int64 { return r.ID }), []int64{cats[0].ID})
}

func testBlasts(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	seg := must(e, "Segments.Create", need(e.c.Segments.Create(ctx, &acs.SegmentCreate{Description: "Everyone"})))
	cat := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: "Announcements"})))
	req := &acs.BlastCreate{
		Status:        &acs.IDRef{ID: acs.BlastStatusDraft},
		BlastTemplate: &acs.IDRef{ID: 3},
		BlastMergeFields: []acs.MergeField{
			{ID: 1, Type: acs.IDRef{ID: 2}, Value: "Spring term"},
			{ID: 2, Type: acs.IDRef{ID: 1}, Value: "<b>Welcome</b> back & enjoy"},
		},
		Name:              acs.Ptr("Term start"),
		ReplyToEmail:      acs.Ptr("news@" + sandbox.DefaultReplyToDomain),
		ReplyToName:       acs.Ptr("The News Team"),
		Subject:           acs.Ptr("Welcome back"),
		Message:           acs.Ptr("<p>Hello</p>"),
		TargetSegments:    []acs.IDRef{{ID: seg.ID}},
		TargetCategories:  []acs.IDRef{{ID: cat.ID}},
		TargetConditional: &acs.IDRef{ID: 1},
		DateScheduledUTC:  ts(t, "2026-02-02 06:00:00"),
	}
	b := must(e, "Blasts.Create", need(e.c.Blasts.Create(ctx, req)))
	want := convert[acs.Blast](t, req)
	want.ID = b.ID
	if b.ID <= 0 {
		t.Fatalf("Blasts.Create answered id %d", b.ID)
	}
	sameJSON(t, "Blasts.Create answer", b, want)
	sameJSON(t, "Blasts.Get", must(e, "Blasts.Get", need(e.c.Blasts.Get(ctx, b.ID))), want)
	b2 := must(e, "Blasts.Create", need(e.c.Blasts.Create(ctx, &acs.BlastCreate{Name: acs.Ptr("Minimal")})))
	b3 := must(e, "Blasts.Create", need(e.c.Blasts.Create(ctx, &acs.BlastCreate{Name: acs.Ptr("Sent"), Status: &acs.IDRef{ID: acs.BlastStatusSent}})))
	blastIDs := func(items []*acs.Blast) []int64 { return idsOf(items, func(b *acs.Blast) int64 { return b.ID }) }

	list := must(e, "Blasts.List", need(e.c.Blasts.List(ctx, nil)))
	wantIDs(t, "Blasts.List", blastIDs(list), []int64{b.ID, b2.ID, b3.ID})
	sameJSON(t, "Blasts.List[0]", list[0], want)
	wantIDs(t, "Blasts.All by 2", blastIDs(collect(e, "Blasts.All", e.c.Blasts.All(ctx, &acs.ListOptions{PageSize: 2}))), []int64{b.ID, b2.ID, b3.ID})
	wantIDs(t, "Blasts.List by name", blastIDs(must(e, "Blasts.List", need(e.c.Blasts.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("name", "Sent")})))), []int64{b3.ID})

	upd := &acs.BlastUpdate{
		Status:           &acs.IDRef{ID: acs.BlastStatusScheduled},
		Subject:          acs.Ptr("Welcome back!"),
		DateScheduledUTC: ts(t, "2026-02-03 06:30:00"),
		BlastMergeFields: []acs.MergeField{{ID: 1, Type: acs.IDRef{ID: 2}, Value: "Summer term"}},
	}
	want = overlay(t, want, upd)
	sameJSON(t, "Blasts.Update answer", must(e, "Blasts.Update", need(e.c.Blasts.Update(ctx, b.ID, upd))), want)
	sameJSON(t, "Blasts.Get after update", must(e, "Blasts.Get", need(e.c.Blasts.Get(ctx, b.ID))), want)
	fails(e, "Blasts.Update", need(e.c.Blasts.Update(ctx, 999, upd)), acs.ErrNotFound)

	must(e, "Blasts.Delete", done(e.c.Blasts.Delete(ctx, b2.ID)))
	fails(e, "Blasts.Get", need(e.c.Blasts.Get(ctx, b2.ID)), acs.ErrNotFound)
	fails(e, "Blasts.Delete", done(e.c.Blasts.Delete(ctx, b2.ID)), acs.ErrNotFound)
	wantIDs(t, "Blasts.List after delete", blastIDs(must(e, "Blasts.List", need(e.c.Blasts.List(ctx, nil)))), []int64{b.ID, b3.ID})
	e.counts("end", map[string]int{"blast": 2})
}

func testInsights(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	var content, subs []int64
	for i := range 3 {
		c := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr(fmt.Sprintf("S%d", i))})))
		content = append(content, c.ID)
	}
	for _, name := range []string{"fay", "gus"} {
		s := must(e, "Subscribers.Create", need(e.c.Subscribers.Create(ctx, &acs.SubscriberCreate{
			FirstName: name, LastName: "Poe", Email: name + "@example.com",
			SubscriberStatus: acs.IDRef{ID: 3}, SubscriberPrivacyLevel: acs.IDRef{ID: 2},
		})))
		subs = append(subs, s.ID)
	}
	idField := func(field string) func(*acs.Insight) int64 {
		return func(in *acs.Insight) int64 {
			var v struct {
				ContentID    int64 `json:"content_id"`
				SubscriberID int64 `json:"subscriber_id"`
			}
			if err := acs.DecodeRaw(in.Raw, &v); err != nil {
				t.Fatalf("insight %s: %v", in.Raw, err)
			}
			if field == "content_id" {
				return v.ContentID
			}
			return v.SubscriberID
		}
	}
	ci := must(e, "Insights.ListContent", need(e.c.Insights.ListContent(ctx, nil)))
	wantIDs(t, "Insights.ListContent content_id", idsOf(ci, idField("content_id")), content)
	n := e.logLen()
	wantIDs(t, "Insights.AllContent by 2", idsOf(collect(e, "Insights.AllContent", e.c.Insights.AllContent(ctx, &acs.ListOptions{PageSize: 2})), idField("content_id")), content)
	if len(e.apiSince(n)) != 2 {
		t.Errorf("Insights.AllContent of 3 by 2: %d requests, want 2", len(e.apiSince(n)))
	}
	one := must(e, "Insights.ListContent", need(e.c.Insights.ListContent(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("content_id", content[1])})))
	wantIDs(t, "Insights.ListContent by content_id", idsOf(one, idField("content_id")), content[1:2])

	si := must(e, "Insights.ListSubscribers", need(e.c.Insights.ListSubscribers(ctx, nil)))
	wantIDs(t, "Insights.ListSubscribers subscriber_id", idsOf(si, idField("subscriber_id")), subs)
	n = e.logLen()
	wantIDs(t, "Insights.AllSubscribers by 1", idsOf(collect(e, "Insights.AllSubscribers", e.c.Insights.AllSubscribers(ctx, &acs.ListOptions{PageSize: 1})), idField("subscriber_id")), subs)
	if len(e.apiSince(n)) != 3 {
		t.Errorf("Insights.AllSubscribers of 2 by 1: %d requests, want 3", len(e.apiSince(n)))
	}
	gus := must(e, "Insights.ListSubscribers", need(e.c.Insights.ListSubscribers(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("email", "gus@example.com")})))
	wantIDs(t, "Insights.ListSubscribers by email", idsOf(gus, idField("subscriber_id")), subs[1:])
}

func testReference(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	refIDs := func(items []*acs.ReferenceItem) []int64 {
		for _, it := range items {
			if strings.TrimSpace(it.Description) == "" {
				t.Errorf("reference item %d has no description: %s", it.ID, it.Raw)
			}
		}
		return idsOf(items, func(r *acs.ReferenceItem) int64 { return r.ID })
	}
	codes := must(e, "Reference.ListDepartureCodes", need(e.c.Reference.ListDepartureCodes(ctx)))
	wantIDs(t, "departure codes", refIDs(codes), []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	if i := slices.IndexFunc(codes, func(r *acs.ReferenceItem) bool { return r.ID == acs.DepartureCodeRetired }); i < 0 ||
		!strings.Contains(strings.ToLower(codes[i].Description), "retire") {
		t.Errorf("departure code 6 is not 'retired': %s", jsonOf(t, codes))
	}
	wantIDs(t, "blast statuses", refIDs(must(e, "Reference.ListBlastStatuses", need(e.c.Reference.ListBlastStatuses(ctx)))),
		[]int64{acs.BlastStatusDraft, acs.BlastStatusSending, acs.BlastStatusScheduled, acs.BlastStatusSent})
	statuses := must(e, "Reference.ListSubscriberStatuses", need(e.c.Reference.ListSubscriberStatuses(ctx)))
	wantIDs(t, "subscriber statuses", refIDs(statuses), []int64{1, 2, 3, 4})
	wantIDs(t, "privacy levels", refIDs(must(e, "Reference.ListPrivacyLevels", need(e.c.Reference.ListPrivacyLevels(ctx)))), []int64{1, 2, 3})
	if len(statuses) == 4 && !strings.Contains(strings.ToLower(statuses[0].Description), "unsubscribed") {
		t.Errorf("subscriber status 1 is %q, want the unsubscribed status", statuses[0].Description)
	}
}

// ---------------------------------------------------------------------------
// Templates and filters.

// listable are the data types with a list endpoint, and their List.
func listable(c *acs.Client) map[string]func(context.Context, *acs.ListOptions) (int, error) {
	wrap := func(n int, err error) (int, error) { return n, err }
	return map[string]func(context.Context, *acs.ListOptions) (int, error){
		acs.TypeSubscriber: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Subscribers.List(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeUnsubscribe: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Unsubscribes.List(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeSegment: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Segments.List(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeCategory: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Categories.List(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeContent: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Content.List(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeBlast: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Blasts.List(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeContentInsights: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Insights.ListContent(ctx, o)
			return wrap(len(v), err)
		},
		acs.TypeSubscriberInsights: func(ctx context.Context, o *acs.ListOptions) (int, error) {
			v, _, err := c.Insights.ListSubscribers(ctx, o)
			return wrap(len(v), err)
		},
	}
}

var allTypes = []string{
	acs.TypeSubscriber, acs.TypeUnsubscribe, acs.TypeSegment, acs.TypeCategory, acs.TypeContent,
	acs.TypeStory, acs.TypeEvent, acs.TypeLink, acs.TypeNeed, acs.TypeBlast,
	acs.TypeContentInsights, acs.TypeSubscriberInsights,
}

func testTemplates(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	templates := map[string]*acs.Template{}
	for _, typ := range allTypes {
		tmpl := must(e, "Templates.Get", need(e.c.Templates.Get(ctx, typ)))
		if tmpl == nil || tmpl.Type != typ || len(tmpl.Fields) == 0 {
			t.Errorf("Templates.Get(%s) = %+v", typ, tmpl)
			continue
		}
		for _, f := range tmpl.Fields {
			if f.Name == "" || f.Type == "" {
				t.Errorf("template %s: field %+v lacks a name or type", typ, f)
			}
		}
		templates[typ] = tmpl
	}
	fails(e, "Templates.Get", need(e.c.Templates.Get(ctx, "nosuchtype")), acs.ErrNotFound)
	for typ, want := range map[string][]string{
		acs.TypeContent: {"external_id", "publish_date_utc"},
		acs.TypeStory:   {"external_id", "publish_date_utc"},
		acs.TypeSegment: {"date_modified_utc"},
	} {
		if tmpl := templates[typ]; tmpl != nil {
			for _, name := range want {
				if !slices.Contains(tmpl.Searchable(), name) {
					t.Errorf("template %s: %s is not searchable (searchable: %v)", typ, name, tmpl.Searchable())
				}
			}
		}
	}
	if tmpl := templates[acs.TypeSubscriber]; tmpl != nil {
		for _, f := range tmpl.Fields {
			if slices.Contains([]string{"first_name", "last_name", "email", "subscriber_status", "subscriber_privacy_level"}, f.Name) && !f.Required {
				t.Errorf("template subscriber: %s is not required (spec 2.3)", f.Name)
			}
		}
	}

	// For every list, the client's filter check and the sandbox agree on
	// every field of the template: a searchable one is accepted by both, any
	// other refused by both, naming the field.
	checking := e.client("", acs.WithFilterCheck())
	for typ, list := range listable(e.c) {
		tmpl := templates[typ]
		if tmpl == nil {
			continue
		}
		for _, fl := range tmpl.Fields {
			filter := acs.Filter{}.IsNull(fl.Name, false)
			_, err := list(ctx, &acs.ListOptions{Filter: filter})
			cerr := checking.Templates.CheckFilter(ctx, typ, filter)
			e.cov.mark("Templates.CheckFilter")
			if fl.Searchable {
				if err != nil {
					t.Errorf("%s: the sandbox refused a filter on searchable %s: %v", typ, fl.Name, err)
				}
				if cerr != nil {
					t.Errorf("%s: CheckFilter refused searchable %s: %v", typ, fl.Name, cerr)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s: the sandbox accepted a filter on %s, which its template does not mark searchable", typ, fl.Name)
			} else if ae := apiError(t, typ+" filter on "+fl.Name, err, http.StatusBadRequest, "filters_json."+fl.Name); ae != nil && !errors.Is(err, acs.ErrInvalid) {
				t.Errorf("%s: filter on %s: %v does not match ErrInvalid", typ, fl.Name, err)
			}
			if !errors.Is(cerr, acs.ErrInvalid) {
				t.Errorf("%s: CheckFilter(%s) = %v, want ErrInvalid", typ, fl.Name, cerr)
			}
		}
	}
	// Marks for the List methods called through listable above.
	for _, name := range []string{"Subscribers.List", "Unsubscribes.List", "Segments.List", "Categories.List", "Content.List", "Blasts.List", "Insights.ListContent", "Insights.ListSubscribers"} {
		e.cov.mark(name)
	}
}

// jsonNames returns the JSON names of the fields of the struct types of vs.
func jsonNames(vs ...any) []string {
	var names []string
	for _, v := range vs {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// testTemplateFields holds the fields each template reports against the
// request and read types of acs: both sides transcribe spec section 2, so
// a field one of them lacks is a mismatch.
func testTemplateFields(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	// Fields the service sets, which no request type may carry.
	assigned := []string{"id", "type", "self", "date_modified_utc", "segments"}
	for _, tc := range []struct {
		typ      string
		requests []any
		skip     []string
	}{
		{acs.TypeStory, []any{acs.StoryCreate{}, acs.StoryUpdate{}}, assigned[:4]},
		{acs.TypeEvent, []any{acs.EventCreate{}, acs.EventUpdate{}}, assigned[:4]},
		{acs.TypeLink, []any{acs.LinkCreate{}, acs.LinkUpdate{}}, assigned[:4]},
		{acs.TypeNeed, []any{acs.NeedCreate{}, acs.NeedUpdate{}}, assigned[:4]},
		// Read through /v3/content. date_modified_utc is the sandbox's own
		// addition: spec 2.7 does not give it to Content.
		{acs.TypeContent, []any{acs.Content{}}, []string{"date_modified_utc"}},
		{acs.TypeSegment, []any{acs.SegmentCreate{}, acs.SegmentUpdate{}}, assigned},
		{acs.TypeCategory, []any{acs.CategoryCreate{}}, assigned},
		{acs.TypeBlast, []any{acs.BlastCreate{}, acs.BlastUpdate{}}, assigned},
		// A Subscriber's segments change only through the segment paths.
		{acs.TypeSubscriber, []any{acs.SubscriberCreate{}, acs.SubscriberUpdate{}}, assigned},
	} {
		tmpl := must(e, "Templates.Get", need(e.c.Templates.Get(e.ctx, tc.typ)))
		var fromTemplate []string
		for _, f := range tmpl.Fields {
			if !slices.Contains(tc.skip, f.Name) {
				fromTemplate = append(fromTemplate, f.Name)
			}
		}
		slices.Sort(fromTemplate)
		fromClient := slices.DeleteFunc(jsonNames(tc.requests...), func(s string) bool { return slices.Contains(tc.skip, s) })
		if !slices.Equal(fromTemplate, fromClient) {
			t.Errorf("%s: the sandbox's template has fields %v\nthe client's types have %v\nonly in the template: %v\nonly in the client: %v",
				tc.typ, fromTemplate, fromClient, uncovered(fromTemplate, fromClient), uncovered(fromClient, fromTemplate))
		}
	}
}

func testFilterCheck(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	c := e.client("", acs.WithFilterCheck())
	must(e, "Stories.Create", need(c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("x"), ExternalID: acs.Ptr("fc:1")})))

	// The first filtered list fetches the template, then refuses before the
	// list request.
	n := e.logLen()
	err := fails(e, "Content.List", need(c.Content.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("body", "x")})), acs.ErrInvalid)
	if err != nil {
		t.Errorf("the refusal is an answer of the service (%v), want a check before sending", err)
	}
	e.wantRequests("Content.List filtered on body", e.apiSince(n), "GET /v3/content/template 200")

	// Then with the template cached: no request at all.
	n = e.logLen()
	fails(e, "Content.All", need(firstOf(c.Content.All(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("summary", "x")}))), acs.ErrInvalid)
	cerr := c.Templates.CheckFilter(ctx, acs.TypeContent, acs.Filter{}.Eq("external_id", "fc:1").Lt("title", "z"))
	e.cov.mark("Templates.CheckFilter")
	if cerr != nil {
		t.Errorf("CheckFilter of searchable fields: %v", cerr)
	}
	if cerr = c.Templates.CheckFilter(ctx, acs.TypeContent, acs.Filter{}.Eq("external_id", "fc:1").Eq("body", "x")); !errors.Is(cerr, acs.ErrInvalid) {
		t.Errorf("CheckFilter with body: %v, want ErrInvalid", cerr)
	}
	if got := e.since(n); len(got) != 0 {
		t.Errorf("with the template cached, refused filters sent requests:%s", showRequests(got))
	}

	// A searchable filter goes through, and selects.
	got := must(e, "Content.List", need(c.Content.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("external_id", "fc:1")})))
	if len(got) != 1 || got[0].ExternalID == nil || *got[0].ExternalID != "fc:1" {
		t.Errorf("Content.List by external_id with the check: %s", jsonOf(t, got))
	}
	// A list refused by the check on another type fetches that type's template.
	n = e.logLen()
	fails(e, "Segments.List", need(c.Segments.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("id", int64(1)).Eq("nosuchfield", 1)})), acs.ErrInvalid)
	e.wantRequests("Segments.List filtered on a field segments lack", e.apiSince(n), "GET /v3/segment/template 200")
}

// firstOf returns the first pair an iterator yields, as a method result.
func firstOf[T any](seq iter.Seq2[T, error]) (T, *acs.Response, error) {
	for v, err := range seq {
		return v, nil, err
	}
	var zero T
	return zero, nil, nil
}

// ---------------------------------------------------------------------------
// Validation.

func testValidation(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	seg := must(e, "Segments.Create", need(e.c.Segments.Create(ctx, &acs.SegmentCreate{Description: "S"})))
	story := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Kept")})))
	sub := must(e, "Subscribers.Create", need(e.c.Subscribers.Create(ctx, &acs.SubscriberCreate{
		FirstName: "Hal", LastName: "Orr", Email: "hal@example.com", SubscriberStatus: acs.IDRef{ID: 4}, SubscriberPrivacyLevel: acs.IDRef{ID: 1},
	})))
	blast := must(e, "Blasts.Create", need(e.c.Blasts.Create(ctx, &acs.BlastCreate{Name: acs.Ptr("B")})))
	event := must(e, "Events.Create", need(e.c.Events.Create(ctx, &acs.EventCreate{Title: acs.Ptr("E")})))
	before := e.sb.Counts()

	cases := []struct {
		method string
		field  string
		call   func() error
	}{
		{"Stories.Create", "title", func() error {
			_, _, err := e.c.Stories.Create(ctx, &acs.StoryCreate{Summary: acs.Ptr("no title")})
			return err
		}},
		{"Stories.Create", "title", func() error { _, _, err := e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("  ")}); return err }},
		{"Stories.Create", "categories[0].id", func() error {
			_, _, err := e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("t"), Categories: []acs.Ref{{ID: 999}}})
			return err
		}},
		{"Stories.Create", "categories[1].id", func() error {
			_, _, err := e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("t"), Categories: []acs.Ref{{ID: 998}, {ID: 998}}})
			return err
		}},
		{"Stories.Update", "title", func() error {
			_, _, err := e.c.Stories.Update(ctx, story.ID, &acs.StoryUpdate{Title: acs.Ptr("")})
			return err
		}},
		{"Events.Create", "segments[0].id", func() error {
			_, _, err := e.c.Events.Create(ctx, &acs.EventCreate{Title: acs.Ptr("t"), Segments: []acs.Ref{{ID: seg.ID + 100}}})
			return err
		}},
		{"Events.Update", "segments[1].id", func() error {
			_, _, err := e.c.Events.Update(ctx, event.ID, &acs.EventUpdate{Segments: []acs.Ref{{ID: seg.ID}, {ID: seg.ID + 100}}})
			return err
		}},
		{"Links.Create", "title", func() error {
			_, _, err := e.c.Links.Create(ctx, &acs.LinkCreate{ExternalURL: acs.Ptr("https://x.example")})
			return err
		}},
		{"Needs.Create", "need_quantity", func() error {
			_, _, err := e.c.Needs.Create(ctx, &acs.NeedCreate{Title: acs.Ptr("t"), NeedQuantity: acs.Ptr(int64(-1))})
			return err
		}},
		{"Subscribers.Create", "email", func() error {
			_, _, err := e.c.Subscribers.Create(ctx, &acs.SubscriberCreate{FirstName: "a", LastName: "b", Email: "not-an-address",
				SubscriberStatus: acs.IDRef{ID: 4}, SubscriberPrivacyLevel: acs.IDRef{ID: 1}})
			return err
		}},
		{"Subscribers.Update", "email", func() error {
			_, _, err := e.c.Subscribers.Update(ctx, sub.ID, &acs.SubscriberUpdate{Email: acs.Ptr("Hal <hal@example.com>"),
				SubscriberStatus: acs.IDRef{ID: 4}, SubscriberPrivacyLevel: acs.IDRef{ID: 1}})
			return err
		}},
		{"Subscribers.Unsubscribe", "departure_code", func() error {
			_, _, err := e.c.Subscribers.Unsubscribe(ctx, sub.ID, &acs.UnsubscribeRequest{DepartureCode: &acs.IDRef{ID: 13}})
			return err
		}},
		{"Segments.AddSubscriber", "id", func() error { _, err := e.c.Segments.AddSubscriber(ctx, seg.ID, 999); return err }},
		{"Blasts.Create", "reply_to_email", func() error {
			_, _, err := e.c.Blasts.Create(ctx, &acs.BlastCreate{ReplyToEmail: acs.Ptr("news@elsewhere.org")})
			return err
		}},
		{"Blasts.Create", "status", func() error {
			_, _, err := e.c.Blasts.Create(ctx, &acs.BlastCreate{Status: &acs.IDRef{ID: 5}})
			return err
		}},
		{"Blasts.Update", "target_categories[0].id", func() error {
			_, _, err := e.c.Blasts.Update(ctx, blast.ID, &acs.BlastUpdate{TargetCategories: []acs.IDRef{{ID: 77}}})
			return err
		}},
		{"Content.List", "page_size", func() error {
			_, _, err := e.c.Content.List(ctx, &acs.ListOptions{PageSize: sandbox.MaxPageSize + 1})
			return err
		}},
		{"Content.List", "filters_json.body", func() error {
			_, _, err := e.c.Content.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("body", "x")})
			return err
		}},
		{"Content.List", "filters_json.publish_date_utc", func() error {
			_, _, err := e.c.Content.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Lt("publish_date_utc", "yesterday")})
			return err
		}},
		{"Segments.List", "filters_json.date_modified_utc", func() error {
			_, _, err := e.c.Segments.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Gt("date_modified_utc", 5)})
			return err
		}},
	}
	for _, tc := range cases {
		n := e.logLen()
		err := tc.call()
		e.cov.mark(tc.method)
		what := tc.method + " refused on " + tc.field
		if !errors.Is(err, acs.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
			continue
		}
		var ae *acs.Error
		if !errors.As(err, &ae) {
			t.Errorf("%s: %v is not the sandbox's answer", what, err)
			continue
		}
		apiError(t, what, err, http.StatusBadRequest, tc.field)
		if ae.Message == "" || ae.Method == "" || !strings.HasPrefix(ae.Route, "/v3/") {
			t.Errorf("%s: error lacks message, method or route: %+v", what, ae)
		}
		if reqs := e.apiSince(n); len(reqs) != 1 {
			t.Errorf("%s: %d requests, want 1 (a 400 is not retried):%s", what, len(reqs), showRequests(reqs))
		}
	}
	if after := e.sb.Counts(); !maps.Equal(before, after) {
		t.Errorf("refused requests changed the sandbox: %v, then %v", before, after)
	}
	got := must(e, "Content.Get", need(e.c.Content.Get(ctx, story.ID)))
	if got.Title == nil || *got.Title != "Kept" {
		t.Errorf("a refused update changed the story: %s", jsonOf(t, got))
	}
}

// testClientValidation: what the client refuses itself sends nothing.
func testClientValidation(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	ok := acs.SubscriberCreate{FirstName: "Ida", LastName: "Poe", Email: "ida@example.com", SubscriberStatus: acs.IDRef{ID: 4}, SubscriberPrivacyLevel: acs.IDRef{ID: 1}}
	with := func(f func(*acs.SubscriberCreate)) *acs.SubscriberCreate { r := ok; f(&r); return &r }
	sub := must(e, "Subscribers.Create", need(e.c.Subscribers.Create(ctx, &ok)))
	n := e.logLen()
	for _, tc := range []struct {
		method, field string
		err           error
	}{
		{"Subscribers.Create", "email", need(e.c.Subscribers.Create(ctx, with(func(r *acs.SubscriberCreate) { r.Email = "" }))).err},
		{"Subscribers.Create", "first_name", need(e.c.Subscribers.Create(ctx, with(func(r *acs.SubscriberCreate) { r.FirstName = " " }))).err},
		{"Subscribers.Create", "subscriber_status.id", need(e.c.Subscribers.Create(ctx, with(func(r *acs.SubscriberCreate) { r.SubscriberStatus.ID = 1 }))).err},
		{"Subscribers.Create", "subscriber_privacy_level.id", need(e.c.Subscribers.Create(ctx, with(func(r *acs.SubscriberCreate) { r.SubscriberPrivacyLevel.ID = 4 }))).err},
		{"Subscribers.Update", "subscriber_status.id", need(e.c.Subscribers.Update(ctx, sub.ID, &acs.SubscriberUpdate{SubscriberStatus: acs.IDRef{ID: 1}, SubscriberPrivacyLevel: acs.IDRef{ID: 1}})).err},
		{"Subscribers.Update", "id", need(e.c.Subscribers.Update(ctx, sub.ID, &acs.SubscriberUpdate{ID: sub.ID + 1, SubscriberStatus: acs.IDRef{ID: 2}, SubscriberPrivacyLevel: acs.IDRef{ID: 1}})).err},
		{"Segments.Create", "description", need(e.c.Segments.Create(ctx, &acs.SegmentCreate{})).err},
		{"Categories.Create", "description", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: ""})).err},
		{"Segments.AddSubscriber", "id", done(e.c.Segments.AddSubscriber(ctx, 1, 0)).err},
		{"Content.Get", "id", need(e.c.Content.Get(ctx, 0)).err},
		{"Stories.Create", "publish_date_utc", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("t"), PublishDateUTC: &acs.Timestamp{}})).err},
		{"Content.List", "page_size", need(e.c.Content.List(ctx, &acs.ListOptions{PageSize: -1})).err},
		{"Content.List", "filters_json.external_id", need(e.c.Content.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.In("external_id", "a,b")})).err},
	} {
		e.cov.mark(tc.method)
		var ve *acs.ValidationError
		if !errors.Is(tc.err, acs.ErrInvalid) || !errors.As(tc.err, &ve) || ve.Field != tc.field {
			t.Errorf("%s with a bad %s: %v, want a *acs.ValidationError on %s", tc.method, tc.field, tc.err, tc.field)
		}
	}
	if got := e.since(n); len(got) != 0 {
		t.Errorf("requests refused by the client reached the sandbox:%s", showRequests(got))
	}
	e.counts("end", map[string]int{"subscriber": 1, "segment": 0, "category": 0, "story": 0})
}

// ---------------------------------------------------------------------------
// Authentication.

func testTokenExpiry(t *testing.T, cov *coverage) {
	const lifetime = 200 * time.Millisecond
	e := newEnv(t, cov, envConfig{realClock: true, tokenLifetime: lifetime})
	ctx := e.ctx
	story := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Before expiry")})))

	// A token fetched now, used raw after the sleep, shows the sandbox
	// really refuses tokens of that age.
	old := fetchToken(t, e)
	time.Sleep(lifetime + 150*time.Millisecond)
	stale, err := acs.NewClient(e.url, acs.StaticToken(old).HTTPClient(e.srv.Client().Transport))
	if err != nil {
		t.Fatal(err)
	}
	fails(e, "Content.Get", need(stale.Content.Get(ctx, story.ID)), acs.ErrUnauthorized)

	n := e.logLen()
	got := must(e, "Content.Get", need(e.c.Content.Get(ctx, story.ID)))
	if got.ID != story.ID {
		t.Errorf("Content.Get after the token expired: %+v", got)
	}
	upd := must(e, "Stories.Update", need(e.c.Stories.Update(ctx, story.ID, &acs.StoryUpdate{Title: acs.Ptr("After expiry")})))
	if upd.Title == nil || *upd.Title != "After expiry" {
		t.Errorf("Stories.Update after the token expired: %s", jsonOf(t, upd))
	}
	reqs := e.since(n)
	if i := slices.IndexFunc(reqs, func(r sandbox.Request) bool { return r.Path == acs.DefaultTokenPath && r.Status == http.StatusOK }); i < 0 {
		t.Errorf("no new token was fetched after the old one expired:%s", showRequests(reqs))
	}
	if last := reqs[len(reqs)-1]; last.Method != http.MethodPut || last.Status != http.StatusOK {
		t.Errorf("the update did not end in a 200:%s", showRequests(reqs))
	}
	e.counts("end", map[string]int{"story": 1})
}

// fetchToken runs the client credentials grant by hand.
func fetchToken(t *testing.T, e *env) string {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, acs.TokenURL(e.url), strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(sandboxID, sandboxSecret)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token endpoint: status %d, %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

// testTokenRefresh: the sandbox's clock jumps past the token's lifetime
// while the client still holds it as valid, so the sandbox answers 401 and
// the client fetches a new token and sends the request again, body included.
func testTokenRefresh(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	cat := must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: "C"})))

	e.clock.Advance(sandbox.DefaultTokenLifetime + time.Minute)
	n := e.logLen()
	must(e, "Categories.Get", need(e.c.Categories.Get(ctx, cat.ID)))
	path := fmt.Sprintf("/v3/category/%d", cat.ID)
	e.wantRequests("a GET with an expired token", e.since(n), "GET "+path+" 401", "POST /oauth/token 200", "GET "+path+" 200")

	e.clock.Advance(sandbox.DefaultTokenLifetime + time.Minute)
	n = e.logLen()
	s := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Replayed"), ExternalID: acs.Ptr("replay:1")})))
	e.wantRequests("a POST with an expired token", e.since(n), "POST /v3/story 401", "POST /oauth/token 200", "POST /v3/story 201")
	if items := e.sb.ItemsByExternalID("replay:1"); len(items) != 1 || items[0].ID != s.ID || items[0].Title != "Replayed" {
		t.Errorf("after the replayed POST the sandbox holds %+v", items)
	}
}

func testWrongCredentials(t *testing.T, cov *coverage) {
	const wrong = "not-the-secret-xyz"
	e := newEnv(t, cov, envConfig{secret: wrong})
	n := e.logLen()
	r := need(e.c.Content.List(e.ctx, nil))
	if ae := fails(e, "Content.List", r, acs.ErrUnauthorized); ae != nil {
		t.Errorf("a refused token fetch is reported as an API answer: %v", ae)
	}
	if r.err != nil && strings.Contains(r.err.Error(), wrong) {
		t.Errorf("the error shows the secret: %v", r.err)
	}
	if reqs := e.apiSince(n); len(reqs) != 0 {
		t.Errorf("without a token the client still called the API:%s", showRequests(reqs))
	}
	// Without any auth, the sandbox answers 401, which is not retried.
	bare, nerr := acs.NewClient(e.url, e.srv.Client(), acs.WithRetryPolicy(fastRetry()))
	if nerr != nil {
		t.Fatal(nerr)
	}
	n = e.logLen()
	if ae := fails(e, "Content.List", need(bare.Content.List(e.ctx, nil)), acs.ErrUnauthorized); ae == nil || ae.Status != http.StatusUnauthorized {
		t.Errorf("Content.List without a token: %+v, want an *acs.Error with status 401", ae)
	}
	e.wantRequests("Content.List without a token", e.since(n), "GET /v3/content 401")
}

// ---------------------------------------------------------------------------
// Faults.

// offAfterFirst returns a hook that turns the sandbox's faults off once an
// attempt was answered with status, and counts the attempts it saw.
func offAfterFirst(t *testing.T, sb *sandbox.Server, status int, attempts *atomic.Int32) acs.Option {
	return acs.WithHook(func(_ context.Context, info acs.RequestInfo) {
		attempts.Add(1)
		if info.Status == status {
			if err := sb.SetFaults(sandbox.Faults{}); err != nil {
				t.Errorf("SetFaults: %v", err)
			}
		}
	})
}

func testFaultsRetried(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	var attempts atomic.Int32
	c := e.client("", offAfterFirst(t, e.sb, http.StatusServiceUnavailable, &attempts))
	story := must(e, "Stories.Create", need(c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Flaky")})))
	path := fmt.Sprintf("/v3/story/%d", story.ID)
	faults := sandbox.Faults{ErrorRate: 1, ErrorCodes: []int{http.StatusServiceUnavailable}}

	set := func() {
		t.Helper()
		if err := e.sb.SetFaults(faults); err != nil {
			t.Fatal(err)
		}
		attempts.Store(0)
	}

	set()
	n := e.logLen()
	got := must(e, "Content.Get", need(c.Content.Get(ctx, story.ID)))
	if got.ID != story.ID {
		t.Errorf("Content.Get after a 503: %+v", got)
	}
	e.wantRequests("GET retried after a 503", e.apiSince(n),
		fmt.Sprintf("GET /v3/content/%d 503 error", story.ID), fmt.Sprintf("GET /v3/content/%d 200", story.ID))

	set()
	n = e.logLen()
	must(e, "Stories.Update", need(c.Stories.Update(ctx, story.ID, &acs.StoryUpdate{Title: acs.Ptr("Steady")})))
	e.wantRequests("PUT retried after a 503", e.apiSince(n), "PUT "+path+" 503 error", "PUT "+path+" 200")
	if items := e.sb.AllContent(); len(items) != 1 || items[0].Title != "Steady" {
		t.Errorf("after the retried PUT the sandbox holds %+v", items)
	}

	set()
	n = e.logLen()
	all := collect(e, "Content.All", c.Content.All(ctx, &acs.ListOptions{PageSize: 10}))
	if len(all) != 1 {
		t.Errorf("Content.All after a 503: %d items", len(all))
	}
	e.wantRequests("list retried after a 503", e.apiSince(n), "GET /v3/content 503 error", "GET /v3/content 200")

	set()
	n = e.logLen()
	must(e, "Stories.Delete", done(c.Stories.Delete(ctx, story.ID)))
	e.wantRequests("DELETE retried after a 503", e.apiSince(n), "DELETE "+path+" 503 error", "DELETE "+path+" 204")
	e.counts("end", map[string]int{"story": 0})
	if attempts.Load() != 2 {
		t.Errorf("the hook saw %d attempts of the DELETE, want 2", attempts.Load())
	}
}

func testFaultsReturned(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	story := must(e, "Stories.Create", need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Down")})))
	if err := e.sb.SetFaults(sandbox.Faults{ErrorRate: 1, ErrorCodes: []int{http.StatusServiceUnavailable}}); err != nil {
		t.Fatal(err)
	}

	// A GET that keeps failing stops after MaxAttempts with the last answer.
	n := e.logLen()
	err := need(e.c.Content.Get(ctx, story.ID)).err
	e.cov.mark("Content.Get")
	apiError(t, "Content.Get while the service is down", err, http.StatusServiceUnavailable, "")
	if reqs := e.apiSince(n); len(reqs) != fastRetry().MaxAttempts {
		t.Errorf("GET while down: %d attempts, want %d:%s", len(reqs), fastRetry().MaxAttempts, showRequests(reqs))
	}

	// A POST answered 503 is not retried: the client cannot know whether
	// it was applied (here it was not).
	n = e.logLen()
	err = need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Lost"), ExternalID: acs.Ptr("down:1")})).err
	e.cov.mark("Stories.Create")
	apiError(t, "Stories.Create while down", err, http.StatusServiceUnavailable, "")
	e.wantRequests("POST while down", e.apiSince(n), "POST /v3/story 503 error")
	if items := e.sb.ItemsByExternalID("down:1"); len(items) != 0 {
		t.Errorf("an unapplied POST stored %+v", items)
	}

	// Injected latency beyond the caller's deadline: the error says so,
	// and is not retried past the deadline.
	if err := e.sb.SetFaults(sandbox.Faults{Latency: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = need(e.c.Content.Get(short, story.ID)).err
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Content.Get beyond its deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Content.Get with a 150ms deadline returned after %v", d)
	}

	if err := e.sb.SetFaults(sandbox.Faults{}); err != nil {
		t.Fatal(err)
	}
	must(e, "Content.Get", need(e.c.Content.Get(ctx, story.ID)))
}

func testCommitThenFail(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	if err := e.sb.SetFaults(sandbox.Faults{CommitThenFail: 1}); err != nil {
		t.Fatal(err)
	}
	n := e.logLen()
	err := need(e.c.Stories.Create(ctx, &acs.StoryCreate{Title: acs.Ptr("Committed"), ExternalID: acs.Ptr("ctf:1")})).err
	e.cov.mark("Stories.Create")
	apiError(t, "Stories.Create with commit-then-fail", err, http.StatusInternalServerError, "")
	e.wantRequests("POST with commit-then-fail is not retried", e.apiSince(n), "POST /v3/story 500 commit_then_fail")
	items := e.sb.ItemsByExternalID("ctf:1")
	if len(items) != 1 {
		t.Fatalf("after one failed POST the sandbox holds %d items with its external_id, want exactly 1", len(items))
	}

	// The caller owns idempotency: it finds the item by external_id (reads
	// are not faulted by commit-then-fail).
	found := must(e, "Content.List", need(e.c.Content.List(ctx, &acs.ListOptions{Filter: acs.Filter{}.Eq("external_id", "ctf:1")})))
	if len(found) != 1 || found[0].ID != items[0].ID || found[0].Title == nil || *found[0].Title != "Committed" {
		t.Errorf("Content.List by external_id after commit-then-fail: %s", jsonOf(t, found))
	}

	// A DELETE is retried; the retry finds the item gone, so a caller sees
	// ErrNotFound although the delete was applied.
	n = e.logLen()
	fails(e, "Stories.Delete", done(e.c.Stories.Delete(ctx, items[0].ID)), acs.ErrNotFound)
	path := fmt.Sprintf("/v3/story/%d", items[0].ID)
	e.wantRequests("DELETE with commit-then-fail", e.apiSince(n), "DELETE "+path+" 500 commit_then_fail", "DELETE "+path+" 404")
	e.counts("end", map[string]int{"story": 0})
}

func testRateLimit(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	// The sandbox's clock stands still, so after one request the bucket is
	// empty until the clock moves.
	if err := e.sb.SetFaults(sandbox.Faults{RateLimit: 1, RateBurst: 1}); err != nil {
		t.Fatal(err)
	}
	once := e.client("", acs.WithRetryPolicy(acs.RetryPolicy{MaxAttempts: 1}))
	must(e, "Reference.ListBlastStatuses", need(once.Reference.ListBlastStatuses(ctx)))
	ae := fails(e, "Reference.ListBlastStatuses", need(once.Reference.ListBlastStatuses(ctx)), acs.ErrRateLimited)
	if ae != nil && ae.RetryAfter != time.Second {
		t.Errorf("429: RetryAfter %v, want 1s", ae.RetryAfter)
	}

	// With retries the client waits the Retry-After (the hook moves the
	// sandbox's clock by as much) and succeeds.
	c := e.client("", acs.WithHook(func(_ context.Context, info acs.RequestInfo) {
		if info.Status == http.StatusTooManyRequests {
			e.clock.Advance(time.Second)
		}
	}))
	n := e.logLen()
	start := time.Now()
	must(e, "Reference.ListPrivacyLevels", need(c.Reference.ListPrivacyLevels(ctx)))
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the retry came after %v, before the Retry-After of 1s", waited)
	}
	e.wantRequests("429 then retried", e.apiSince(n), "GET /v3/subscriber_privacy_level 429 rate_limit", "GET /v3/subscriber_privacy_level 200")
}

// testDefaultPaging: a list without paging parameters is the first 100
// entries (spec 4.1 and 8), and All walks on from there.
func testDefaultPaging(t *testing.T, cov *coverage) {
	e := newEnv(t, cov, envConfig{})
	ctx := e.ctx
	const n = acs.DefaultPageSize + 2
	for i := range n {
		must(e, "Categories.Create", need(e.c.Categories.Create(ctx, &acs.CategoryCreate{Description: fmt.Sprintf("c%03d", i)})))
	}
	first, resp, err := e.c.Categories.List(ctx, nil)
	e.cov.mark("Categories.List")
	if err != nil {
		t.Fatalf("Categories.List: %v", err)
	}
	if len(first) != acs.DefaultPageSize || resp.Page != acs.DefaultPage || resp.PageSize != acs.DefaultPageSize || resp.Total != n {
		t.Errorf("Categories.List(nil): %d items, page %d, page_size %d, total %d; want %d, 1, %d, %d",
			len(first), resp.Page, resp.PageSize, resp.Total, acs.DefaultPageSize, acs.DefaultPageSize, n)
	}
	mark := e.logLen()
	all := collect(e, "Categories.All", e.c.Categories.All(ctx, nil))
	if len(all) != n || all[n-1].Description != fmt.Sprintf("c%03d", n-1) {
		t.Errorf("Categories.All(nil): %d categories, want %d", len(all), n)
	}
	e.wantRequests("Categories.All(nil)", e.apiSince(mark), "GET /v3/category 200", "GET /v3/category 200")
	big := must(e, "Categories.List", need(e.c.Categories.List(ctx, &acs.ListOptions{PageSize: sandbox.MaxPageSize})))
	if len(big) != n {
		t.Errorf("Categories.List with the maximum page size: %d, want %d", len(big), n)
	}
}

// testAuthStyles: the token endpoint takes the credentials by HTTP Basic
// and by form fields, also when they hold characters that need escaping.
func testAuthStyles(t *testing.T, cov *coverage) {
	const id, secret = "feed worker+1", "p@ss:w%rd &+/=\u00fc"
	e := newEnv(t, cov, envConfig{sandboxID: id, sandboxSecret: secret})
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleAutoDetect, oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		c := e.credsClient(acs.ClientCredentials{TokenURL: acs.TokenURL(e.url), ClientID: id, ClientSecret: secret, AuthStyle: style})
		if _, _, err := c.Reference.ListSubscriberStatuses(e.ctx); err != nil {
			t.Errorf("auth style %d: %v", style, err)
		}
		e.cov.mark("Reference.ListSubscriberStatuses")
		bad := e.credsClient(acs.ClientCredentials{TokenURL: acs.TokenURL(e.url), ClientID: id, ClientSecret: secret + "x", AuthStyle: style})
		fails(e, "Reference.ListSubscriberStatuses", need(bad.Reference.ListSubscriberStatuses(e.ctx)), acs.ErrUnauthorized)
	}
}
