package dedupe

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// TestKeepErrno: bbolt words a failed growth of its file as text
// ("file resize error: %s"); the store makes the cause matchable again,
// and leaves other errors alone.
func TestKeepErrno(t *testing.T) {
	grown := fmt.Errorf("file resize error: %s", &pathErr{"truncate /x/store.db", syscall.ENOSPC})
	err := keepErrno(grown)
	if !errors.Is(err, syscall.ENOSPC) || err.Error() != grown.Error() {
		t.Errorf("keepErrno(%q) = %q, Is ENOSPC %v; want the same text, matching ENOSPC", grown, err, errors.Is(err, syscall.ENOSPC))
	}
	wrapped := fmt.Errorf("commit: %w", syscall.EROFS)
	if got := keepErrno(wrapped); got != wrapped {
		t.Errorf("keepErrno of an error already matching EROFS = %v; want it unchanged", got)
	}
	other := errors.New("bucket not found")
	if got := keepErrno(other); got != other {
		t.Errorf("keepErrno(%v) = %v; want it unchanged", other, got)
	}
}

type pathErr struct {
	op  string
	err error
}

func (e *pathErr) Error() string { return e.op + ": " + e.err.Error() }
