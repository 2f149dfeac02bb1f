package worker

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/feedworker/feedworker/history"
	"github.com/feedworker/feedworker/internal/jsonfast"
	"github.com/feedworker/feedworker/transform"
)

// digest is a short hash per group of mapped fields, so the history can
// name what changed in an update. 24 bits each: a diagnostic, not a proof.
// It is kept as numbers until the history is written (history.Digest).
//
// Each value is hashed (FNV-1a, 32 bits) as json.Marshal writes it, each
// followed by a zero byte: the history compares digests across versions,
// so those bytes must not change. The fields' own types are written here
// without reflection, and strings are escaped straight into the hash (the
// body's HTML, escaped by encoding/json to \u003c and the like, was most of
// the cost); other values go through encoding/json.
func digest(pl *transform.Payload) history.Digest {
	var d history.Digest
	// One buffer for the numbers and times, of a time's size.
	h := digester{sum: fnvOffset, buf: make([]byte, 0, 64)}
	// Each value by its own type, not through ...any: boxing the strings,
	// times and pointers was most of what a digest allocated.
	set := func(g history.Field) {
		d.Set(g, h.sum)
		h.sum = fnvOffset
	}
	h.str(pl.Type)
	set(history.FieldType)
	h.str(pl.Title)
	set(history.FieldTitle)
	h.str(pl.Summary)
	set(history.FieldSummary)
	h.str(pl.Body)
	set(history.FieldBody)
	h.str(pl.ImageURL)
	set(history.FieldImage)
	h.str(pl.ExternalURL)
	h.str(pl.MoreButtonText)
	set(history.FieldLink)
	h.time(pl.PublishDate)
	h.time(pl.ExpirationDate)
	h.time(pl.PriorityUntil)
	set(history.FieldDates)
	list(&h, pl.CategoryIDs, h.int)
	list(&h, pl.CategoryNames, h.jsonString)
	set(history.FieldCategories)
	for _, p := range []*int64{pl.AuthorID, pl.PriorityID, pl.StatusID} {
		h.intp(p)
	}
	list(&h, pl.Segments, h.int)
	for _, p := range []*bool{pl.Private, pl.ExclusiveToSegment, pl.AvailableInPartner, pl.EnableComments, pl.EnableLinkTracking, pl.Evergreen} {
		h.boolp(p)
	}
	set(history.FieldSettings)
	jsonp(&h, pl.Event)
	set(history.FieldEvent)
	jsonp(&h, pl.Need)
	set(history.FieldNeed)
	return d
}

// str, time, list, jsonp, intp, boolp and null hash one value as
// json.Marshal writes it, then the zero byte that ends it.
func (h *digester) str(s string) {
	h.jsonString(s)
	h.byte(0)
}

// time hashes t as Time.MarshalJSON writes it (AppendText is its text
// without the quotes and, unlike it, allocates nothing); a time it refuses
// (a year outside 0–9999, a zone offset of 24 hours or more) adds
// nothing, as when the encoder's error was ignored.
func (h *digester) time(t time.Time) {
	if b, err := t.AppendText(h.buf[:0]); err == nil {
		h.byte('"')
		h.bytes(b)
		h.byte('"')
		h.buf = b
	}
	h.byte(0)
}

// jsonp hashes *p as json.Marshal writes it, null when p is nil.
func jsonp[T any](h *digester, p *T) {
	if p == nil {
		h.null()
		return
	}
	h.marshal(p)
	h.byte(0)
}

// list hashes v as a JSON array, each element by elem.
func list[T any](h *digester, v []T, elem func(T)) {
	if v == nil {
		h.null()
		return
	}
	h.byte('[')
	for i, x := range v {
		if i > 0 {
			h.byte(',')
		}
		elem(x)
	}
	h.byte(']')
	h.byte(0)
}

func (h *digester) intp(p *int64) {
	if p == nil {
		h.null()
		return
	}
	h.int(*p)
	h.byte(0)
}

func (h *digester) boolp(p *bool) {
	switch {
	case p == nil:
		h.null()
		return
	case *p:
		h.string("true")
	default:
		h.string("false")
	}
	h.byte(0)
}

func (h *digester) null() {
	h.string("null")
	h.byte(0)
}

// FNV-1a, 32 bits (hash/fnv's New32a), kept in a value so that strings are
// hashed without a copy into a []byte.
const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

type digester struct {
	sum uint32
	buf []byte // scratch for numbers and times
}

func (h *digester) byte(c byte) { h.sum = (h.sum ^ uint32(c)) * fnvPrime }

// string and bytes keep the sum in a local: through h, every byte would
// wait for the store of the last.
func (h *digester) string(s string) {
	sum := h.sum
	for i := 0; i < len(s); i++ {
		sum = (sum ^ uint32(s[i])) * fnvPrime
	}
	h.sum = sum
}

func (h *digester) bytes(b []byte) {
	sum := h.sum
	for _, c := range b {
		sum = (sum ^ uint32(c)) * fnvPrime
	}
	h.sum = sum
}

func (h *digester) int(n int64) {
	h.buf = strconv.AppendInt(h.buf[:0], n, 10)
	h.bytes(h.buf)
}

func (h *digester) marshal(v any) {
	b, err := json.Marshal(v)
	if err == nil {
		h.bytes(b)
	}
}

// jsonString hashes s as encoding/json writes a string with HTML escaping
// (json.Marshal's default: jsonfast.AppendStringHTML's bytes). Bytes
// written as they are are hashed as they are scanned: one pass over s.
func (h *digester) jsonString(s string) {
	h.byte('"')
	for i := 0; i < len(s); {
		sum := h.sum
		for i < len(s) && jsonfast.Verbatim(s[i], true) {
			sum = (sum ^ uint32(s[i])) * fnvPrime
			i++
		}
		h.sum = sum
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			h.string(jsonfast.EscapeASCII(c))
			i++
			continue
		}
		esc, size := jsonfast.EscapeRune(s[i:])
		if esc == "" {
			esc = s[i : i+size]
		}
		h.string(esc)
		i += size
	}
	h.byte('"')
}
