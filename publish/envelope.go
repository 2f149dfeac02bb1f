package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/feedworker/feedworker/transform"
)

// envelope is what the outbox keeps per item: the payload and the feed
// settings delivery needs.
type envelope struct {
	V                int                 `json:"v"`
	Payload          transform.Payload   `json:"payload"`
	RecreateDeleted  bool                `json:"recreate_deleted,omitempty"`
	CreateCategories bool                `json:"create_categories,omitempty"`
	Dates            transform.DateRules `json:"dates,omitzero"`
	// MergeInto makes the entry a merge job (see merge.go).
	MergeInto *mergeInto `json:"merge_into,omitempty"`
}

// Outbox entry versions. Version 1 is the envelope as one JSON document.
// Version 2, written since, keeps the body (sanitized HTML, most of an
// entry's bytes) out of the JSON: the envelope without it, one line of
// JSON, then a newline and the body's bytes as they are. The body is then
// encoded once, for the request, where version 1 escaped it for the
// outbox, scanned it twice and unescaped it at delivery before encoding
// it again. Version 1 entries, queued by older workers, are still read.
const (
	envelopeV1 = 1
	envelopeV2 = 2
)

// errEnvelopeVersion marks an outbox entry of a version this worker does
// not know (one written by a newer worker).
var errEnvelopeVersion = errors.New("unknown envelope version")

// encodeEnvelope returns env as a version 2 outbox entry. env.Payload.Body
// goes after the JSON line; env.V is set here.
func encodeEnvelope(env envelope) ([]byte, error) {
	// One allocation of about the entry's size in the common case (a
	// string to escape can outgrow it, at the cost of a copy): a fixed
	// kilobyte of room was a sixth of what encoding an entry allocated.
	b, err := appendEntryHead(make([]byte, 0, len(env.Payload.Body)+headSize(&env)), env)
	if err != nil {
		return nil, err
	}
	return append(b, env.Payload.Body...), nil
}

// appendEntryHead appends the head of env's version 2 outbox entry to dst:
// the entry without the body that follows it (env.Payload.Body). The head
// ends with the newline that separates the body; the JSON before it holds
// none (encoding/json escapes newlines in strings and indents nothing).
func appendEntryHead(dst []byte, env envelope) ([]byte, error) {
	env.V, env.Payload.Body = envelopeV2, ""
	start := len(dst)
	b, ok := appendHead(dst, &env)
	if ok {
		return b, nil
	}
	// Over what appendHead may have written.
	buf := bytes.NewBuffer(b[start:start])
	enc := json.NewEncoder(buf)
	// The HTML escapes would only lengthen the entry: it is never
	// embedded in HTML.
	enc.SetEscapeHTML(false)
	// A copy for encoding/json, which keeps env itself off the heap in the
	// common case (the payload is about 500 bytes).
	slow := env
	if err := enc.Encode(&slow); err != nil {
		return dst, err
	}
	return append(b[:start], buf.Bytes()...), nil
}

// headRoom is a head's bytes beyond its strings' and numbers' in the
// common case: the keys, quotes and commas of the fields a feed's item
// has, and its dates (about 170 bytes with one date). An entry that sets
// every option outgrows it, and is copied once.
const headRoom = 256

// headSize estimates the bytes of env's head, the body left out.
func headSize(env *envelope) int {
	pl := &env.Payload
	n := headRoom + len(pl.Type) + len(pl.FeedID) + len(pl.ExternalID) + len(pl.Title) + len(pl.Summary) +
		len(pl.ImageURL) + len(pl.ExternalURL) + len(pl.MoreButtonText) + len(pl.Hash) +
		20*(len(pl.CategoryIDs)+len(pl.Segments))
	for _, c := range pl.CategoryNames {
		n += len(c) + 3
	}
	if env.MergeInto != nil {
		n += len(env.MergeInto.Target)
	}
	return n
}

// decodeEnvelope reads an outbox entry of either version. The strings of
// env share data's memory where they can (the body always does).
func decodeEnvelope(data string, env *envelope) error {
	// A version 1 entry (json.Marshal's output) holds no raw newline.
	head, body, split := strings.Cut(data, "\n")
	if orig := *env; !parseHead(head, env) {
		// Into a copy, as into env: the caller's envelope then stays
		// off the heap in the common case.
		slow := orig
		err := json.Unmarshal([]byte(head), &slow)
		*env = slow
		if err != nil {
			return err
		}
	}
	switch {
	case env.V == envelopeV1 && !split:
		return nil
	case env.V == envelopeV2 && split:
		if env.Payload.Body != "" {
			return fmt.Errorf("%w: version 2 with a body in its JSON", errEnvelopeVersion)
		}
		env.Payload.Body = body
		return nil
	}
	return fmt.Errorf("%w %d", errEnvelopeVersion, env.V)
}
