package worker

import (
	"path/filepath"
	"testing"
)

// TestShippedConfigsLoad loads every config the repository ships with the
// worker's full checks (transform's rule compilation included), so an
// example cannot rot.
func TestShippedConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../deploy/config.yaml", "../config/testdata/valid/full.yaml")
	if len(files) < 3 {
		t.Fatalf("found only %v", files)
	}
	t.Setenv("FW_CLIENT_SECRET", "x") // used by config/testdata/valid/full.yaml
	for _, f := range files {
		if _, err := LoadConfig(f, "test"); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
