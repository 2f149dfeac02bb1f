package publish

import (
	"errors"
	"fmt"
	"testing"

	"github.com/feedworker/feedworker/dedupe"
)

// TestAfterCommit: a commit's own failure is neither part; an alias or a
// note failure after it is its part, with its cause; both at once are
// split, each part naming its own cause only.
func TestAfterCommit(t *testing.T) {
	causeA, causeN := errors.New("alias node down"), errors.New("note node down")
	aliasPart := fmt.Errorf("commit feed f: %w: %w", dedupe.ErrAliasesNotStored, causeA)
	notePart := fmt.Errorf("commit feed f: %w: %w", dedupe.ErrNotesNotStored, causeN)
	for _, c := range []struct {
		name        string
		err         error
		alias, note error // nil: none; otherwise the error that must be that part
	}{
		{"none", nil, nil, nil},
		{"the commit failed", errors.New("fenced"), nil, nil},
		{"aliases", aliasPart, aliasPart, nil},
		{"notes", notePart, nil, notePart},
		{"both", errors.Join(aliasPart, notePart), aliasPart, notePart},
	} {
		a, n := afterCommit(c.err)
		if a != c.alias || n != c.note {
			t.Errorf("%s: afterCommit = %v, %v; want %v, %v", c.name, a, n, c.alias, c.note)
		}
	}
}
