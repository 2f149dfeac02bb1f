package transform

import (
	"net/url"
	"strings"
)

// parseBase parses s as an absolute http(s) URL to resolve others against.
// It returns nil when s cannot serve as a base.
func parseBase(s string) *url.URL {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || !isHTTP(u) || u.Host == "" {
		return nil
	}
	return u
}

func isHTTP(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return s == "http" || s == "https"
}

// absoluteURL resolves raw against base and returns it only when the result
// is an absolute http(s) URL with a host. Protocol-relative URLs ("//host/x")
// get https when there is no base, because that is what a browser on an
// https page would fetch.
func absoluteURL(raw string, base *url.URL) (*url.URL, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > maxURLLen {
		return nil, false
	}
	// Browsers strip tabs and newlines inside URLs; do the same so that
	// "java\tscript:" and split-line links are judged by what they become.
	if strings.ContainsAny(raw, "\t\n\r") {
		raw = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, false
	}
	return resolveURL(u, raw, base)
}

// absoluteHost is absoluteURL's verdict with the URL's host name and path;
// a plain URL (see plainURL) is not parsed.
func absoluteHost(raw string, base *url.URL) (host, path string, ok bool) {
	if t := strings.TrimSpace(raw); len(t) <= maxURLLen {
		if host, path, ok := plainURL(t); ok {
			return host, path, true
		}
	}
	u, ok := absoluteURL(raw, base)
	if !ok {
		return "", "", false
	}
	return u.Hostname(), u.Path, true
}

// absoluteString is absoluteURL written out (as u.String()), with the
// written URL's host name and path; a plain URL (see plainURL) is taken as
// it is, without a parse.
func absoluteString(raw string, base *url.URL) (abs, host, path string, ok bool) {
	if t := strings.TrimSpace(raw); len(t) <= maxURLLen {
		if host, path, ok := plainURL(t); ok {
			return t, host, path, true
		}
	}
	u, ok := absoluteURL(raw, base)
	if !ok {
		return "", "", "", false
	}
	return u.String(), u.Hostname(), u.Path, true
}

// resolveURL is absoluteURL for raw, a trimmed URL of at most maxURLLen
// without tabs or line breaks, already parsed as u (which it may change).
func resolveURL(u *url.URL, raw string, base *url.URL) (*url.URL, bool) {
	if !u.IsAbs() {
		switch {
		case base != nil:
			u = base.ResolveReference(u)
		case strings.HasPrefix(raw, "//"):
			u.Scheme = "https"
		default:
			return nil, false
		}
	}
	if !isHTTP(u) || u.Host == "" {
		return nil, false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return u, true
}

// maxURLLen bounds the URLs kept: longer ones are data smuggled in a URL,
// not links.
const maxURLLen = 4096

// canonicalLink returns the canonical form of an item link: absolute
// http(s), host lower-cased, default port, user info and fragment removed,
// tracking parameters dropped, an empty path written as "/". The remaining
// query keeps its order and encoding, because some servers care about both.
func canonicalLink(raw string, base *url.URL) string {
	if c, ok := canonicalPlain(raw); ok {
		return c
	}
	u := canonicalURL(raw, base)
	if u == nil {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// identityLink is canonicalLink keeping the fragment: one-page feeds
// (comment threads, link blogs, newsletters) tell their items apart by it
// alone, so it belongs to the item's identity even though the link that is
// sent drops it.
func identityLink(raw string, base *url.URL) string {
	if c, ok := canonicalPlain(raw); ok {
		return c // a plain URL has no fragment
	}
	if u := canonicalURL(raw, base); u != nil {
		return u.String()
	}
	return ""
}

func canonicalURL(raw string, base *url.URL) *url.URL {
	u, ok := absoluteURL(raw, base)
	if !ok {
		return nil
	}
	u.User = nil
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	if port != "" && !(u.Scheme == "http" && port == "80") && !(u.Scheme == "https" && port == "443") {
		host += ":" + port
	}
	u.Host = host
	if u.Path == "" && u.RawPath == "" && u.Opaque == "" {
		u.Path = "/"
	}
	u.RawQuery = stripTracking(u.RawQuery)
	u.ForceQuery = false
	return u
}

// canonicalPlain is canonicalURL written out, for a plain URL (see
// plainURL): it has no port, user info or fragment to drop, so only the
// host is lower-cased, an empty path becomes "/" and tracking parameters
// go (TestCanonicalPlain holds it to canonicalURL).
func canonicalPlain(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if len(raw) > maxURLLen {
		return "", false
	}
	host, path, ok := plainURL(raw)
	if !ok {
		return "", false
	}
	scheme, _, _ := strings.Cut(raw, ":")
	lower := strings.ToLower(host)
	q := strings.IndexByte(raw, '?')
	if q < 0 && path != "" && lower == host {
		return raw, true // canonical already
	}
	query := ""
	if q >= 0 {
		query = stripTracking(raw[q+1:])
	}
	if path == "" {
		path = "/"
	}
	host = lower
	var b strings.Builder
	b.Grow(len(raw) + 1)
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(host)
	b.WriteString(path)
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String(), true
}

// stripTracking drops tracking parameters from a raw query, keeping the
// others byte for byte.
func stripTracking(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	var b strings.Builder
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		key, _, _ := strings.Cut(part, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if isTrackingParam(strings.ToLower(key)) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(part)
	}
	return b.String()
}

// isTrackingParam reports whether a lower-cased query key only tracks the
// visitor (campaign, click and mail ids) and never selects content.
func isTrackingParam(key string) bool {
	if strings.HasPrefix(key, "utm_") {
		return true
	}
	switch key {
	case "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "ttclid", "twclid",
		"igshid", "li_fat_id", "mc_cid", "mc_eid", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id", "oly_enc_id",
		"vero_id", "vero_conv", "wickedid", "_openstat", "__s", "ncid", "sr_share", "_ga", "_gl":
		return true
	}
	return false
}

// plainURL recognises the absolute http(s) URLs that net/url parses and
// writes back unchanged: a lower-case http or https scheme, a host of
// letters, digits, dots and hyphens (no port, no user info), a path and a
// query of characters that need no escaping, and no fragment. Most links
// in feed HTML are such, and each was parsed and written two or three
// times (the ad check, the resolve, the sanitizer's check). For them,
// url.Parse(s) succeeds, its String() is s, its Host and Hostname() are
// host and its Path is path (TestPlainURL and FuzzPlainURL hold that), so
// the callers skip the parse and the write.
func plainURL(s string) (host, path string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(s, "https://"):
		rest = s[len("https://"):]
	case strings.HasPrefix(s, "http://"):
		rest = s[len("http://"):]
	default:
		return "", "", false
	}
	i := 0
	for i < len(rest) && hostChar(rest[i]) {
		i++
	}
	if i == 0 || i < len(rest) && rest[i] != '/' && rest[i] != '?' {
		return "", "", false // no host, a port, user info, a fragment or anything else
	}
	host, rest = rest[:i], rest[i:]
	path = rest
	for j := 0; j < len(rest); j++ {
		switch c := rest[j]; {
		case c == '?':
			if len(path) == len(rest) {
				path = rest[:j]
			}
		case !plainChar(c):
			return "", "", false
		}
	}
	return host, path, true
}

func hostChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-'
}

// plainChar reports the bytes net/url leaves as they are in a path and a
// query: unreserved characters and the reserved ones a path may hold.
func plainChar(c byte) bool {
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return true
	}
	switch c {
	case '-', '.', '_', '~', '/', '$', '&', '+', ',', ':', ';', '=', '@':
		return true
	}
	return false
}
