package worker

import (
	"testing"
	"testing/fstest"
)

func TestMemoryLimit(t *testing.T) {
	v2 := func(s string) fstest.MapFS { return fstest.MapFS{"memory.max": {Data: []byte(s + "\n")}} }
	v1 := func(s string) fstest.MapFS {
		return fstest.MapFS{"memory/memory.limit_in_bytes": {Data: []byte(s + "\n")}}
	}
	for _, tt := range []struct {
		name, setting string
		cgroup        fstest.MapFS
		want          int64
		wantSource    string
		wantErr       bool
	}{
		{"auto in a 1 GiB container", "auto", v2("1073741824"), 966367641, "cgroup memory limit", false},
		{"auto, cgroup v1", "auto", v1("2147483648"), 1932735283, "cgroup memory limit", false},
		{"auto, v1 without a limit", "auto", v1("9223372036854771712"), 0, "", false},
		{"auto, no limit", "auto", v2("max"), 0, "", false},
		{"auto, no cgroup", "auto", fstest.MapFS{}, 0, "", false},
		{"auto, unreadable", "auto", v2("lots"), 0, "", true},
		{"a size wins over the container", "256MiB", v2("1073741824"), 256 << 20, "process.memory_limit", false},
		{"off", "off", v2("1073741824"), 0, "process.memory_limit", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, source, err := memoryLimit(tt.setting, "", tt.cgroup)
			if (err != nil) != tt.wantErr || got != tt.want || source != tt.wantSource {
				t.Errorf("memoryLimit(%q) = %d, %q, %v; want %d, %q, error %v", tt.setting, got, source, err, tt.want, tt.wantSource, tt.wantErr)
			}
		})
	}
	// GOMEMLIMIT set: the runtime's own limit stands, whatever the setting.
	if _, source, err := memoryLimit("256MiB", "1GiB", v2("max")); err != nil || source != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT: source %q, err %v", source, err)
	}
}
