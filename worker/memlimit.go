package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/feedworker/feedworker/config"
)

// cgroupShare is the part of a container's memory limit that "auto" gives
// the Go heap and runtime: the rest is for what the limit also counts and
// the runtime does not manage (the binary, the bbolt file's mapped pages).
const cgroupShare = 0.9

// SetMemoryLimit applies process.memory_limit to the Go runtime
// (runtime/debug.SetMemoryLimit), once at start, and logs what it chose. A
// GOMEMLIMIT in the environment wins: the runtime has applied it already.
// It returns the limit set, or 0 when there is none.
func SetMemoryLimit(p config.Process, logger *slog.Logger) int64 {
	limit, source, err := memoryLimit(p.MemoryLimit, os.Getenv("GOMEMLIMIT"), os.DirFS("/sys/fs/cgroup"))
	if err != nil {
		logger.Warn("process.memory_limit: no limit set", "err", err)
		return 0
	}
	if limit > 0 && source != "GOMEMLIMIT" {
		debug.SetMemoryLimit(limit)
	}
	if limit > 0 {
		logger.Info("memory limit", "bytes", limit, "from", source)
	}
	return limit
}

// memoryLimit resolves a memory_limit setting: the limit in bytes (0 for
// none) and where it came from. env is GOMEMLIMIT's value; cgroup is the
// cgroup file system (/sys/fs/cgroup) that "auto" reads.
func memoryLimit(setting, env string, cgroup fs.FS) (int64, string, error) {
	if env != "" {
		// The runtime has parsed it at start; report what it holds.
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
			return l, "GOMEMLIMIT", nil
		}
		return 0, "GOMEMLIMIT", nil
	}
	limit, auto, err := config.ParseMemoryLimit(setting)
	if err != nil || !auto {
		return limit, "process.memory_limit", err
	}
	c, err := cgroupMemory(cgroup)
	if err != nil || c == 0 {
		return 0, "", err
	}
	return int64(float64(c) * cgroupShare), "cgroup memory limit", nil
}

// cgroupMemory reads the memory limit of the process's container: cgroup
// v2 memory.max, else v1 memory/memory.limit_in_bytes. 0 means none ("max",
// no such file, or v1's "unlimited" value near the largest int64).
func cgroupMemory(cgroup fs.FS) (int64, error) {
	for _, name := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := fs.ReadFile(cgroup, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("cgroup %s: %w", name, err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cgroup %s: %q is not a size", name, s)
		}
		if n <= 0 || n >= 1<<60 { // v1 writes "no limit" as a page-rounded MaxInt64
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}
