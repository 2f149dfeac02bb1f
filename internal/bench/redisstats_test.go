package bench

import "testing"

func TestKeyKind(t *testing.T) {
	for key, want := range map[string]string{
		"{p:3}f:farm-7:seen":     "{p}f:*:seen",
		"{p:3:12}f:a:b:val":      "{p}f:*:val",
		"{p:3}f:farm-7:a:ab12cd": "{p}f:*:a:*",
		"{p:0}q:due":             "{p}q:due",
		"{p:9}x:ffee":            "{p}x:*",
		"{p:9}lease:feed:farm-1": "{p}lease:*",
		"hb:host-1":              "hb:*",
		"members":                "members",
		"note:farm-1:etag":       "note:*:etag",
		"hist:{f:farm-1}:polls":  "hist:*:polls",
		"hist:{h}:1700000000":    "hist:{h}:*",
	} {
		if got := keyKind(key); got != want {
			t.Errorf("keyKind(%q) = %q, want %q", key, got, want)
		}
	}
}
