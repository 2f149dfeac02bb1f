// Package transform maps the items of a parsed feed to content payloads
// (Story, Link, Event or Need) for the Audience and Content Service.
//
// The mapping is pure: [Compile] checks a feed's [config.Mapping] once, when
// the configuration loads, and [Mapping.Map] turns a whole *gofeed.Feed into
// one [Result] per item, with the clock passed in. Nothing here does I/O
// except [OGImageFetcher], which the worker calls for results that ask for it.
//
// # Steps
//
// Each item goes through the same fixed steps, in this order:
//
//  1. identity: the external id comes from the GUID, else the canonical link,
//     else the title and date; a GUID used twice in one fetch makes the whole
//     feed fall back to link-based keys, and a link shared by several items
//     of one fetch (a podcast's show page) identifies none of them;
//  2. canonicalise URLs: the item link loses tracking parameters, fragment,
//     default port and user info, and its host is lower-cased;
//  3. make URLs absolute: content URLs resolve against xml:base (gofeed does
//     this for Atom content and for links; it does not keep xml:base for RSS
//     content), then the item link, then the feed link; a <base> element
//     inside content is removed, never obeyed;
//  4. clean the content: feed-ad blocks, tracking pixels and lazy-loading
//     tricks are handled on the parsed HTML;
//  5. pick the content type (type_rules), filter (include, exclude, max_age,
//     require_image), pick the image and categories, read event and need
//     fields;
//  6. sanitize the body last, with an allowlist policy;
//  7. hash the payload.
//
// # Dates and the hash
//
// [Payload.Hash] depends only on the item and the mapping, so an unchanged
// item hashes the same on every poll. For that reason Map never looks at the
// clock when it builds a payload: a date the item lacks stays zero and a
// future date stays in the future. The publisher applies both at send time
// with [Payload.ForSend], which fills the first-seen time, clamps to now and
// derives the expiration and priority dates again; it keeps the hash. The
// clock passed to Map is used only by the max_age filter.
//
// # External ids
//
// An external id is "fw1-" followed by 20 hex digits of
// sha256(feed id, NUL, key), where key is "guid:"+GUID, "link:"+canonical
// link or "title:"+title+NUL+date. The link in a key keeps its fragment,
// which alone tells apart the items of one-page feeds (comment threads, link
// blogs); the link sent as external_url drops it. The id does not depend on
// the item's content or on mapping settings other than the feed id.
package transform
