// Package article fetches the web pages that feed items link to and
// extracts their main content, for feeds that publish only a summary
// (full_text in the configuration).
//
// A Fetcher works within the same limits as the feed fetcher (size cap,
// timeouts, redirects, per-host concurrency, user agent) and behind the
// same address guard as og:image lookups (internal/netguard): pages on
// non-public addresses are refused unless http.allow_networks lists them.
// Extracted articles are cached by URL and revalidated with conditional
// GET, so a feed polled again does not fetch its articles again.
//
// Extraction takes the elements a CSS selector picks when the feed names
// one, else the main content found by readability
// (codeberg.org/readeck/go-readability, a port of Mozilla's Readability.js).
// The result is raw HTML: the caller sanitizes it (package transform) like
// any feed content. Nothing here knows about feeds, mappings or payloads.
package article
