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
	body := env.Payload.Body
	env.V, env.Payload.Body = envelopeV2, ""
	// One allocation in the common case: the JSON line of a payload
	// without its body is well under 1 KiB beyond its title and summary.
	b := make([]byte, 0, len(body)+len(env.Payload.Title)+len(env.Payload.Summary)+1024)
	b, ok := appendHead(b, &env)
	if !ok {
		buf := bytes.NewBuffer(b[:0])
		enc := json.NewEncoder(buf)
		// The HTML escapes would only lengthen the entry: it is never
		// embedded in HTML.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&env); err != nil {
			return nil, err
		}
		b = buf.Bytes()
	}
	// The head ends with the newline that separates the body; the JSON
	// before it holds none (encoding/json escapes newlines in strings and
	// indents nothing).
	return append(b, body...), nil
}

// decodeEnvelope reads an outbox entry of either version. The strings of
// env share data's memory where they can (the body always does).
func decodeEnvelope(data string, env *envelope) error {
	// A version 1 entry (json.Marshal's output) holds no raw newline.
	head, body, split := strings.Cut(data, "\n")
	if orig := *env; !parseHead(head, env) {
		*env = orig
		if err := json.Unmarshal([]byte(head), env); err != nil {
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
