//go:build unix

package acs

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user and system, all
// threads, GC included). Benchmarks report it beside wall time because on a
// shared machine wall time also counts the waits for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
