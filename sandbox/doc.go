// Package sandbox is a strict local implementation of the Audience and
// Content Service API v3 (described in docs/API.md), with OAuth
// tokens and faults on demand. It is the default the quickstart runs
// against, the server behind the acs client's contract tests and the
// worker's end-to-end tests, and a tool users can start on their own
// machine. It does not import the project's acs package: it works on raw
// JSON and its own field tables, so it is an independent check of the
// client.
//
// # Running
//
//	var opts sandbox.Options
//	opts.FromEnv(os.Getenv)
//	opts.RegisterFlags(fs) // --addr, --data, --client-id, --client-secret, faults...
//	// fs.Parse(args)
//	srv, err := sandbox.New(opts)
//	// ...
//	err = srv.ListenAndServe(ctx, opts.Addr) // returns nil once ctx is done
//
// A [Server] is also an http.Handler, for httptest servers and in-process
// use.
//
// # Endpoints
//
// Every method and path of spec section 4 (45 of them), plus:
//
//	POST /oauth/token            client credentials grant (RFC 6749 4.4)
//	GET  /v3/{type}/template     for subscriber, unsubscribe, segment, category,
//	                             content, story, event, link, need, blast,
//	                             content_insights, subscriber_insights
//	GET|PUT|DELETE /_sandbox/faults, POST /_sandbox/reset   control, no token
//
// Content is read only through /v3/content and written only through
// /v3/story, /v3/event, /v3/link and /v3/need; a GET on those is 405. Every
// /v3 request needs Authorization: Bearer with an unexpired token from the
// token endpoint (HTTP Basic or form credentials); otherwise 401 with a JSON
// error and a WWW-Authenticate challenge.
//
// # Wire conventions
//
// As docs/ARCHITECTURE.md sets them: create 201, read and update 200, delete
// 204; one object is {"data": {...}}; a list is {"data": [...], "page",
// "page_size", "total"}; an error is {"error": {"status", "message",
// "field"}}; content read through /v3/content carries "type"; page_size is
// at most [MaxPageSize]; filters_json takes the eight operators of spec 2.9,
// in with one comma-separated string and isnull with a boolean, on the
// fields the type's template marks searchable; an injected 429 carries
// Retry-After in seconds. The token endpoint answers {"access_token",
// "token_type": "Bearer", "expires_in"} and errors in the RFC 6749 shape
// {"error", "error_description"}, which OAuth libraries read.
//
// # Validation
//
// Each refusal is a 400 naming the field: the envelope (template.version
// "3.0", exactly one object in template.data), Content-Type
// application/json, duplicate keys, unknown fields, fields a content type
// does not have or not in this kind of request (spec 2.7), read-only fields
// (id on create, self, type, date_modified_utc), the type of every field
// (integers are integer literals, timestamps exactly YYYY-MM-DD HH:MM:SS),
// required fields, subscriber_status 1, privacy levels 1 to 3, departure
// codes 1 to 12, the id of a PUT body against the path, categories and
// segments that do not exist, empty titles and names, and a Blast's
// reply_to_email domain. Unknown paths and ids are 404, wrong methods 405
// with Allow, and query parameters outside lists 400.
//
// # Choices where the spec is silent
//
//   - PUT merges: fields sent replace, fields sent as null are cleared
//     (except required ones), fields not sent are kept. Create-only fields
//     (a Need's publish_date_utc and need_* fields) are kept by updates.
//     Content PUT bodies must carry id (spec 2.7); other PUT bodies may, and
//     then it must match.
//   - Required: a content title; a Subscriber's names, e-mail, status and
//     privacy level (status and privacy on update too); descriptions of
//     Segments and Categories. Nothing on Blasts.
//   - Every stored resource has date_modified_utc, set on create and on every
//     change, including segment membership (which modifies both the
//     Subscriber and the Segment) and references scrubbed by a delete.
//   - Ids are per collection, increasing and never reused; an Unsubscribe
//     keeps its Subscriber's id. Deleting a Segment or a Category removes
//     every reference to it (content, Subscribers, Blasts) and keeps the
//     records.
//   - Unsubscribe answers 200 with the Unsubscribe record: status 1, the
//     person's name, e-mail and privacy level, the termination data given,
//     no segments. Adding to a Segment answers 200 with the Subscriber;
//     adding twice is harmless.
//   - Refs get self links {base}/v3/{target}/{id}, base being the scheme and
//     Host of the request and, under [Server.Mount], its prefix; refs whose target the spec does not define
//     (author, priority, content_status, time_zone) get links of the same
//     shape, which this sandbox does not serve.
//   - external_id is not unique: posting an item twice stores two, which
//     [Server.ItemsByExternalID] shows.
//   - Filters compare like SQL: an absent field matches only isnull true;
//     strings compare byte-wise; in items are not trimmed.
//   - Insights are one record per Content or Subscriber with zero counts;
//     subscriber_interest ranks the Categories of the content the Subscriber
//     can see (exclusive content only in its segments) by number of items.
//   - Departure codes other than 6 ("retired") have invented descriptions.
//
// # Faults
//
// [Faults] are off by default and set by [Options].Faults, the fault flags,
// [Server.SetFaults] or PUT /_sandbox/faults with
//
//	{"latency":"200ms","error_rate":0.1,"error_codes":[500,503],
//	 "rate_limit":5,"rate_burst":5,"commit_then_fail":0.5,"seed":1}
//
// They apply to /v3 only, before authentication: latency, then the rate limit
// (429 with Retry-After), then the error rate (the request is not applied),
// then, after a successful write, commit-then-fail (the write is applied and
// the answer is a 500).
//
// [Options].NotSearchable (flag --not-searchable) plays a service that
// does not search some fields: "content.external_id" makes the content
// template show external_id as not searchable and every filter on it a
// 400, as the spec allows (only searchable fields may be filtered on).
//
// # Answer styles
//
// The spec shows no response bodies, so [Options].Style (flag --style)
// chooses how successful answers are written. [StyleStrict], the default,
// writes the shapes of the wire conventions. [StyleLoose] writes the same
// data as an untidier service might, for testing a client's tolerance:
// ids and other numbers as strings, timestamps in RFC 3339 with
// milliseconds in a +02:00 zone, booleans as 1 and 0, null for some
// absent fields, extra fields (legacy_key, _links, a top-level meta),
// paging numbers as strings, and template flags as lists (searchable: the
// data types, required: the operations). Requests are validated and
// errors answered alike in both styles.
//
// # Data file
//
// With [Options].DataFile the state is loaded at start and kept in that
// file as a snapshot of the whole state followed by a journal: each write
// appends one checksummed line (the records it changed) and is answered
// only once the line is synced; writes answered together share one sync.
// When the journal outgrows the snapshot, a new snapshot is written to a
// temporary file and renamed over the data file. A kill -9 can leave at
// most a torn last line, of a write never answered, which the next start
// drops; the start also folds the journal into a fresh snapshot. Tokens
// are kept as SHA-256 digests, so tokens issued before a restart still
// work. A file that does not decode (a damaged snapshot, or a damaged
// journal line before the last) is refused, never overwritten.
//
// # Reading the state in tests
//
// [Server.ItemsByExternalID], [Server.AllContent], [Server.Counts],
// [Server.Requests] (method, path, status, fault), [Server.Reset].
package sandbox
