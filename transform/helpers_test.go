package transform

import (
	"testing"

	"github.com/feedworker/feedworker/config"
)

// mustCompile compiles a mapping for tests; edit, when not nil, sets it up.
func mustCompile(t testing.TB, feedID string, edit func(*config.Mapping)) *Mapping {
	t.Helper()
	var cm config.Mapping
	if edit != nil {
		edit(&cm)
	}
	m, err := Compile(feedID, cm)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }
