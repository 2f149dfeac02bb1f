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
