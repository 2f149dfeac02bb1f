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
	var h digester
	group := func(g history.Field, vs ...any) {
		h.sum = fnvOffset
		for _, v := range vs {
			h.value(v)
			h.byte(0)
		}
		d.Set(g, h.sum)
	}
	group(history.FieldType, pl.Type)
	group(history.FieldTitle, pl.Title)
	group(history.FieldSummary, pl.Summary)
	group(history.FieldBody, pl.Body)
	group(history.FieldImage, pl.ImageURL)
	group(history.FieldLink, pl.ExternalURL, pl.MoreButtonText)
	group(history.FieldDates, pl.PublishDate, pl.ExpirationDate, pl.PriorityUntil)
	group(history.FieldCategories, pl.CategoryIDs, pl.CategoryNames)
	group(history.FieldSettings, pl.AuthorID, pl.PriorityID, pl.StatusID, pl.Segments, pl.Private, pl.ExclusiveToSegment,
		pl.AvailableInPartner, pl.EnableComments, pl.EnableLinkTracking, pl.Evergreen)
	group(history.FieldEvent, pl.Event)
	group(history.FieldNeed, pl.Need)
	return d
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

// value hashes json.Marshal(v). A value json.Marshal refuses (a time
// outside years 0–9999) adds nothing, as it did when the encoder's error
// was ignored.
func (h *digester) value(v any) {
	switch v := v.(type) {
	case string:
		h.jsonString(v)
	case time.Time:
		b, err := v.MarshalJSON()
		if err == nil {
			h.bytes(b)
		}
	case []int64:
		if v == nil {
			h.string("null")
			return
		}
		h.byte('[')
		for i, n := range v {
			if i > 0 {
				h.byte(',')
			}
			h.int(n)
		}
		h.byte(']')
	case []string:
		if v == nil {
			h.string("null")
			return
		}
		h.byte('[')
		for i, s := range v {
			if i > 0 {
				h.byte(',')
			}
			h.jsonString(s)
		}
		h.byte(']')
	case *int64:
		if v == nil {
			h.string("null")
			return
		}
		h.int(*v)
	case *bool:
		switch {
		case v == nil:
			h.string("null")
		case *v:
			h.string("true")
		default:
			h.string("false")
		}
	case *transform.Event:
		if v == nil {
			h.string("null")
			return
		}
		h.marshal(v)
	case *transform.Need:
		if v == nil {
			h.string("null")
			return
		}
		h.marshal(v)
	default:
		h.marshal(v)
	}
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
