//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time this process has used (user and system, all threads,
// GC included), or 0 where it cannot be read.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
