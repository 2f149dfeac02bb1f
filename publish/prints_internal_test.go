package publish

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"testing"
)

// TestPrintsUnchanged checks digest and bandPrint against the formulas
// they replace: stored aliases must keep matching.
func TestPrintsUnchanged(t *testing.T) {
	old := func(kind byte, s string) string {
		sum := sha256.Sum256([]byte(s))
		return string(kind) + ":" + base64.RawURLEncoding.EncodeToString(sum[:12])
	}
	for _, s := range []string{"", "example.com/a", "https://example.org/a/very/long/path/beyond/thirty/two/bytes?q=1"} {
		if got, want := digest('u', s), old('u', s); got != want {
			t.Errorf("digest(%q) = %s, want %s", s, got, want)
		}
	}
	for _, bits := range []uint64{0, 1, 0xf, 0x10, 0xab, 0x100, 0xfff, 0x1000, 0xbeef, 0xffff} {
		for band := range simBands {
			want := old('b', fmt.Sprintf("%s|%d|%04x", "2026-01-02", band, bits))
			if got := bandPrint("2026-01-02", band, bits); got != want {
				t.Errorf("bandPrint(%d, %#x) = %s, want %s", band, bits, got, want)
			}
		}
	}
}
