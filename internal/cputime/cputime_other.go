//go:build !unix

package cputime

import "time"

// Self is not measured here: benchmarks then report zero CPU time.
func Self() time.Duration { return 0 }
