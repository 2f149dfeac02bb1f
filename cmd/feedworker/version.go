package main

import (
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..." (the
// Makefile and the Dockerfile do). Left empty, buildVersion reads the
// version from the build info instead.
var version string

// buildVersion is the version this binary reports (--version, the
// feedworker_build_info metric, the status page).
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(version, bi)
}

// versionOf picks, in order: the linker's -X value; the module version
// (`go install module@v1.2.3`); the VCS revision stamped by `go build` in a
// checkout (12 hex digits, "-dirty" with uncommitted changes); "dev".
func versionOf(linked string, bi *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
