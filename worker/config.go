package worker

import (
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
	for i, f := range cfg.Feeds {
		if _, err := transform.Compile(f.ID, f.Mapping); err != nil {
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
	for _, f := range cfg.Feeds {
		m, err := transform.Compile(f.ID, f.Mapping)
		if err != nil {
			return nil, fmt.Errorf("feed %s: %w", f.ID, err)
		}
		out[f.ID] = m
	}
	return out, nil
}
