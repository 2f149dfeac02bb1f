package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/feedworker/feedworker/config"
	"github.com/feedworker/feedworker/transform"
)

// Loader returns the config loader the worker uses: config's own checks
// plus the compilation of every feed's mapping rules, so that an invalid
// expression is reported with its file and line like any other problem.
func Loader(version string) config.Loader {
	return config.Loader{Version: version, Check: checkMappings}
}

// LoadConfig loads and fully checks the configuration file at path.
func LoadConfig(path, version string) (*config.Config, error) {
	return Loader(version).Load(path)
}

func checkMappings(cfg *config.Config, problems *config.Problems) {
	mc := newMappingCache(len(cfg.Feeds))
	for i, f := range cfg.Feeds {
		if _, err := mc.compile(f.ID, f.Mapping); err != nil {
			var ce *transform.CompileError
			if !errors.As(err, &ce) {
				problems.Add(cfg, fmt.Sprintf("feeds[%d]", i), err.Error())
				continue
			}
			for _, fe := range ce.Fields {
				problems.Add(cfg, fmt.Sprintf("feeds[%d].%s", i, fe.Path), fe.Err.Error())
			}
		}
	}
}

// compileMappings compiles every feed's mapping of a config that already
// passed checkMappings.
func compileMappings(cfg *config.Config) (map[string]*transform.Mapping, error) {
	out := make(map[string]*transform.Mapping, len(cfg.Feeds))
	mc := newMappingCache(len(cfg.Feeds))
	for _, f := range cfg.Feeds {
		m, err := mc.compile(f.ID, f.Mapping)
		if err != nil {
			return nil, fmt.Errorf("feed %s: %w", f.ID, err)
		}
		out[f.ID] = m
	}
	return out, nil
}

// mappingCache compiles each distinct mapping setting once. With thousands
// of feeds on the same (usually default) mapping, compiling each feed's
// copy cost about 1.5 KiB of live heap and 25 KiB of garbage a feed, twice
// (checkMappings, then New); the feeds now share the compiled rules and
// keep only a copy of the Mapping's top-level struct with their own id.
type mappingCache struct {
	byKey map[string]*transform.Mapping
	buf   bytes.Buffer // the key being built, reused: only new keys are kept
}

func newMappingCache(n int) *mappingCache {
	return &mappingCache{byKey: make(map[string]*transform.Mapping, min(n, 64))}
}

// compile is transform.Compile(feedID, m), shared between identical m.
// Only successes are kept: a failing mapping is compiled for each feed so
// that every feed's errors name that feed.
func (c *mappingCache) compile(feedID string, m config.Mapping) (*transform.Mapping, error) {
	// The key is the settings as JSON (map keys sorted, pointers followed):
	// equal JSON is equal settings. A mapping that cannot be encoded is
	// simply compiled on its own.
	c.buf.Reset()
	if err := json.NewEncoder(&c.buf).Encode(m); err != nil || feedID == "" {
		return transform.Compile(feedID, m)
	}
	if shared, ok := c.byKey[string(c.buf.Bytes())]; ok {
		return shared.ForFeed(feedID), nil
	}
	out, err := transform.Compile(feedID, m)
	if err != nil {
		return nil, err
	}
	c.byKey[c.buf.String()] = out
	return out, nil
}
