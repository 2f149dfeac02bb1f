package worker

import (
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/dedupe/dedupetest"
)

// TestShippedConfigsLoad loads every config the repository ships with the
// worker's full checks (transform's rule compilation included), so an
// example cannot rot.
func TestShippedConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../deploy/config.yaml", "../deploy/config-cluster.yaml", "../config/testdata/valid/full.yaml")
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

func TestRestartOnlySeesARotatedSecret(t *testing.T) {
	a, err := LoadConfig("../examples/quickstart.yaml", "test")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LoadConfig("../examples/quickstart.yaml", "test")
	if got := restartOnly(a, b); len(got) != 0 {
		t.Errorf("identical configs differ in %v", got)
	}
	b.API.ClientSecret = "rotated"
	if got := restartOnly(a, b); len(got) != 1 || got[0] != "api" {
		t.Errorf("a rotated secret shows as %v, want [api]", got)
	}
}

// TestPersistenceCheck runs against the test Redis, whatever its settings,
// and against a private one with append-only persistence on.
func TestPersistenceCheck(t *testing.T) {
	srv := dedupetest.StartServer(t)
	rc := redis.NewClient(srv.Options())
	defer rc.Close()
	if !persistent(t.Context(), rc) {
		t.Error("a Redis with appendonly yes reads as not persistent")
	}
	if err := rc.ConfigSet(t.Context(), "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigSet(t.Context(), "save", "").Err(); err != nil {
		t.Fatal(err)
	}
	if persistent(t.Context(), rc) {
		t.Error("a Redis with appendonly no and no save points reads as persistent")
	}
}
