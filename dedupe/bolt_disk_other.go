//go:build !linux

package dedupe

import (
	"fmt"
	"os"
)

// reserve checks that dir takes a new file; only Linux reserves room
// (fallocate), elsewhere the write transaction is the probe.
func reserve(dir, name string, _ int64) error {
	f, err := os.CreateTemp(dir, name+"-*")
	if err != nil {
		return fmt.Errorf("probe the store's disk: %w", err)
	}
	f.Close()
	return os.Remove(f.Name())
}
