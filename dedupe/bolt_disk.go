package dedupe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// diskErrnos are the causes of a write the disk refuses: full, over quota,
// read-only, failing, or over the process's file size limit.
var diskErrnos = [...]syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.EFBIG}

// keepErrno makes a disk cause that bbolt reports as text only ("file
// resize error: %s" when the file cannot grow) matchable with errors.Is
// again, so that the worker tells a full disk from a bad write.
func keepErrno(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range diskErrnos {
		if errors.Is(err, e) {
			return err
		}
	}
	for _, e := range diskErrnos {
		if strings.Contains(err.Error(), e.Error()) {
			return errnoText{err, e}
		}
	}
	return err
}

// errnoText is an error whose text names an errno it does not wrap.
type errnoText struct {
	err   error
	errno syscall.Errno
}

func (e errnoText) Error() string   { return e.err.Error() }
func (e errnoText) Unwrap() []error { return []error{e.err, e.errno} }

// maxGrowth is bbolt's default AllocSize (16 MiB): the most the file
// grows by at once.
const maxGrowth = 16 << 20

// ProbeWrite tells whether the store can write again after a disk error:
// it reads, commits an empty write transaction (bbolt rewrites its meta
// page) and reserves beside the file, then frees, the room the file's
// next growth takes (its size, at least 1 MiB and at most 16 MiB, as bbolt
// grows it). On a full disk an overwrite in place may pass while growth
// fails; the reservation fails there too, so the store is not reported
// back until a commit can be expected to pass.
func (b *Bolt) ProbeWrite(ctx context.Context) error {
	if _, err := b.Stats(ctx, time.Now()); err != nil {
		return err
	}
	if err := b.update(ctx, "probe write", func(*bolt.Tx) error { return nil }); err != nil {
		return err
	}
	path := b.db.Path()
	size := int64(1 << 20)
	if fi, err := os.Stat(path); err == nil {
		size = min(max(size, fi.Size()), int64(maxGrowth))
	}
	return reserve(filepath.Dir(path), filepath.Base(path)+".probe", size)
}
