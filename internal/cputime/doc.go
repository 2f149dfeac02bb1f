// Package cputime reads the process's own CPU time for benchmarks, which
// report it beside wall time because on a shared machine wall time also counts
// the waits for a core.
package cputime
