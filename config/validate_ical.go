package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Formats are the values of format.
func Formats() []string { return []string{"auto", "feed", "ical"} }

// ICalOnCancel are the values of ical.on_cancel.
func ICalOnCancel() []string { return []string{"delete", "keep"} }

func (c checker) format(field string, f *string) {
	if f != nil && !slices.Contains(Formats(), *f) {
		c.add(field, "unknown format %q (want auto, feed or ical)", *f)
	}
}

// ical checks the ical section of a feed or of the defaults.
func (c checker) ical(prefix string, s FeedSettings) {
	at := func(key string) string { return prefix + ".ical." + key }
	ic := s.ICal
	c.positivePtr(at("window"), ic.Window)
	if ic.OnCancel != nil && !slices.Contains(ICalOnCancel(), *ic.OnCancel) {
		c.add(at("on_cancel"), "unknown value %q (want delete or keep)", *ic.OnCancel)
	}
	if s.Format != nil && *s.Format == "ical" && s.Type != "" && s.Type != "event" {
		c.add(prefix+".type", "an ical feed publishes events: want type event (or leave type unset), got %q", s.Type)
	}
}

// RepostMatchers are the values of reposts.match.
func RepostMatchers() []string { return []string{"url", "text"} }

// reposts checks the reposts section of a feed or of the defaults.
func (c checker) reposts(prefix string, r Reposts) {
	at := func(key string) string { return prefix + ".reposts." + key }
	for i, m := range r.Match {
		if !slices.Contains(RepostMatchers(), m) {
			c.add(fmt.Sprintf("%s[%d]", at("match"), i), "unknown matcher %q (want url or text)", m)
		}
	}
	c.positivePtr(at("window"), r.Window)
	c.notNegative(at("flood_max"), r.FloodMax)
}

// websub checks the websub section.
func (c checker) websub(w WebSub, admin Admin) {
	if w.PublicURL != "" {
		c.httpURL("websub.public_url", w.PublicURL)
		if u, err := url.Parse(w.PublicURL); err == nil && (u.RawQuery != "" || u.Fragment != "") {
			c.add("websub.public_url", "must not have a query or fragment: feed ids are appended to its path")
		}
	}
	if _, port, err := net.SplitHostPort(w.Listen); err != nil || port == "" {
		c.add("websub.listen", "want host:port (such as :8091), got %q", w.Listen)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		c.add("websub.listen", "want host:port (such as :8091), got %q", w.Listen)
	} else if w.PublicURL != "" && admin.Listen != "" && sameListen(w.Listen, admin.Listen) {
		c.add("websub.listen", "%q is admin.listen too: the callback needs its own listener", w.Listen)
	}
	switch {
	case w.Lease < Duration(time.Minute):
		c.add("websub.lease", "must be at least 1m")
	case w.Lease > Duration(365*24*time.Hour):
		c.add("websub.lease", "must be at most 365d")
	}
	c.positive("websub.fallback_interval", w.FallbackInterval)
}

func sameListen(a, b string) bool {
	_, pa, _ := net.SplitHostPort(a)
	_, pb, _ := net.SplitHostPort(b)
	return pa != "" && pa == pb
}
