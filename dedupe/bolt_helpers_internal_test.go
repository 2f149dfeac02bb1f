package dedupe

import (
	"path/filepath"
	"testing"
)

// openFileBolt opens a store in a new file of the test's temporary
// directory and returns it with the file's path, for tests that crash and
// open it again. The test closes it.
func openFileBolt(t *testing.T) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b, path
}
