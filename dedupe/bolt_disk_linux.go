package dedupe

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// reserve allocates n bytes in a temporary file of dir and removes it.
func reserve(dir, name string, n int64) error {
	f, err := os.CreateTemp(dir, name+"-*")
	if err != nil {
		return fmt.Errorf("probe the store's disk: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	err = unix.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		// A file system that cannot reserve: the write transaction is
		// the probe.
		return nil
	}
	if err != nil {
		return fmt.Errorf("probe the store's disk: reserve %d bytes in %s: %w", n, dir, err)
	}
	return nil
}
