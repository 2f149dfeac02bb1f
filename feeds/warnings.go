package feeds

import (
	"cmp"
	"slices"
)

// Warning is a problem with a feed as a whole rather than with one poll or
// item: it holds while the feed stays as it is. The poller logs a warning
// when it appears and when it clears, not on every poll, and the status
// page lists the ones in force.
type Warning struct {
	// Code names the kind of problem; a feed has at most one warning per
	// code, and a new Message under the same code is not a new warning.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Warning codes the poller raises; a Handler adds its own (WarnMapping).
const (
	// WarnMoved: the feed answered 301/308; its config should name the new URL.
	WarnMoved = "moved"
	// WarnPartial: the last document ended early or broke off.
	WarnPartial = "partial"
	// WarnCharset: the document declared no encoding and was not UTF-8.
	WarnCharset = "charset_guessed"
	// WarnMapping: the mapping met a problem with the feed's items as a
	// whole, such as one GUID on several items.
	WarnMapping = "mapping"
)

// normWarnings sorts ws by code and keeps the first of each code.
func normWarnings(ws []Warning) []Warning {
	out := slices.Clone(ws)
	slices.SortStableFunc(out, func(a, b Warning) int { return cmp.Compare(a.Code, b.Code) })
	return slices.CompactFunc(out, func(a, b Warning) bool { return a.Code == b.Code })
}

// warningChanges returns the warnings of next whose code prev lacks, and
// those of prev whose code next lacks; both lists are normalised.
func warningChanges(prev, next []Warning) (appeared, cleared []Warning) {
	has := func(ws []Warning, code string) bool {
		return slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == code })
	}
	for _, w := range next {
		if !has(prev, w.Code) {
			appeared = append(appeared, w)
		}
	}
	for _, w := range prev {
		if !has(next, w.Code) {
			cleared = append(cleared, w)
		}
	}
	return appeared, cleared
}

// feedWarnings are a feed's warnings in the poller's memory: doc those of
// the last document handled, cur those in force (doc's and moved), as last
// logged.
type feedWarnings struct {
	doc, cur []Warning
}

// docWarnings are the warnings of the last document handled.
func (fs *feedState) docWarnings() []Warning {
	if fs.warns == nil {
		return nil
	}
	return fs.warns.doc
}

// warnings are the warnings in force, as last logged.
func (fs *feedState) warnings() []Warning {
	if fs.warns == nil {
		return nil
	}
	return fs.warns.cur
}

// setWarnings sets both lists; a feed without warnings holds none.
func (fs *feedState) setWarnings(doc, cur []Warning) {
	if len(doc) == 0 && len(cur) == 0 {
		fs.warns = nil
		return
	}
	fs.warns = &feedWarnings{doc: doc, cur: cur}
}
