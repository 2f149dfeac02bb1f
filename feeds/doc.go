// Package feeds fetches, parses and schedules the polling of feeds.
//
// # Fetching
//
// A [Fetcher] does the HTTP itself, after miniflux's reader: a conditional
// GET with the stored [Validators] (If-None-Match, If-Modified-Since), gzip
// and deflate asked for and decoded here so the decompressed size can be
// capped, connect and total timeouts, a maximum body size ([ErrTooLarge]), at
// most N redirects with loop detection, a real User-Agent, the proxy from the
// config or the environment, and file:// URLs for local feeds. Statuses
// become typed errors: 304 is [Result.NotModified]; 301/308 are followed and
// reported in [Result.MovedTo]; 302/307 are followed silently; 410 is
// [ErrGone]; 429 (and 503 with Retry-After) is a [*RetryAfterError]; other
// non-2xx statuses are a [*StatusError]. [Class] maps any error to the
// bounded result label of the poll metrics.
//
// # Parsing
//
// [Parse] hands the body to gofeed.Parser.Parse after normalising it: a gzip
// body sent without Content-Encoding, byte order marks, UTF-16/UTF-32,
// legacy charsets (declared in the XML, else the Content-Type charset, else
// windows-1252 for bytes that are not UTF-8), characters XML forbids, and
// comments before the XML declaration. Failures are a [*ParseError], never
// a panic.
//
// # Scheduling
//
// [Schedule] is pure (clock and random source are passed in): each feed has
// its own interval between a floor and a ceiling, spread by ±10% jitter and a
// random first poll; failures back off exponentially to a ceiling and never
// give up; Retry-After and the feed's own hints (RSS ttl, Cache-Control
// max-age, Expires) are honoured when they ask for less frequent polling,
// never more.
//
// # Polling
//
// A [Poller] runs one scheduling goroutine and a bounded number of fetches,
// overall and per host, and reports to a [Handler]. The validators it sends
// change only after [Handler.Handle] returned nil for the body that carried
// them, so a fetch that fails halfway, a body that does not parse or a
// handler that cannot store the items never lose items for good. [Poller.Update]
// applies a reload, [Poller.Snapshot] feeds the status page, [Poller.PollAll]
// is one pass for `feedworker once`, and an optional [Owner] lets replicas
// share feeds through leases.
package feeds
