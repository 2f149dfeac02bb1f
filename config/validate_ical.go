package config

import "slices"

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
