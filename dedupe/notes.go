package dedupe

import (
	"context"
	"fmt"
	"regexp"
)

// Notes keep a small document per feed and name that a source needs from
// one poll to the next, shared by every replica: the upcoming occurrences
// of an iCalendar feed (to notice one that disappears), a feed's WebSub
// subscription. The store does not read them.
//
// Redis keeps each note at "P note:F:NAME" (a string); bbolt in the
// top-level bucket "notes" under "F/NAME". A note is deleted by storing
// nil, and is not swept by retention: a feed's notes stay until replaced.
type Notes interface {
	// Note returns a note; ok is false when there is none.
	Note(ctx context.Context, feedID, name string) (data []byte, ok bool, err error)
	// SetNote stores a note, replacing any; nil data deletes it.
	SetNote(ctx context.Context, feedID, name string, data []byte) error
}

// NoteWrite is a note that [AliasCommitter.CommitAliases] sets with a
// fetch's changes: nil Data deletes it.
type NoteWrite struct {
	Name string
	Data []byte
}

func checkNoteWrites(feedID string, notes []NoteWrite) error {
	for _, n := range notes {
		if err := checkNote(feedID, n.Name); err != nil {
			return err
		}
	}
	return nil
}

// noteName is the shape of a note's name: short and free of separators.
var noteName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func checkNote(feedID, name string) error {
	if err := checkFeedID(feedID); err != nil {
		return err
	}
	if !noteName.MatchString(name) {
		return fmt.Errorf("note %q: %w: want a lower-case name of at most 32 letters, digits, _ or -", name, ErrInvalid)
	}
	return nil
}
