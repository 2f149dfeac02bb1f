package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// String writes d the way the file would: "15m", "6h", "90d", so that
// printed configurations and problems read like the file.
func (d Duration) String() string { return formatDuration(d) }

// String writes b with the largest binary unit that divides it: "10MiB".
func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		n      ByteSize
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.n && b%u.n == 0 {
			return strconv.FormatInt(int64(b/u.n), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

func formatDuration(d Duration) string {
	const day = 24 * time.Hour
	t := time.Duration(d)
	if t > day && t%day == 0 {
		return fmt.Sprintf("%dd", t/day)
	}
	s := t.String()
	if strings.HasSuffix(s, "m0s") { // "15m0s", "1h0m0s"
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") { // "1h0m"
		s = s[:len(s)-2]
	}
	return s
}
