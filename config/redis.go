package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Describe names where Redis is, for logs and errors: the mode and the
// addresses (or the URL with its password redacted), never a password.
func (r Redis) Describe() string {
	switch r.Topology() {
	case RedisSentinel:
		return fmt.Sprintf("sentinel master %q via %s", r.MasterName, strings.Join(r.Addrs, ","))
	case RedisCluster:
		return "cluster " + strings.Join(r.Addrs, ",")
	}
	if r.URL != "" {
		return RedactURL(r.URL)
	}
	return strings.Join(r.Addrs, ",")
}

// readRedisPassword replaces redis.password_file by the trimmed content of
// the file it names (relative to the configuration file's directory).
func readRedisPassword(cfg *Config, probs *Problems) {
	r := &cfg.Redis
	if r.PasswordFile == "" {
		return
	}
	if r.Password != "" {
		probs.Add(cfg, "redis.password_file", "set password or password_file, not both")
		return
	}
	if !filepath.IsAbs(r.PasswordFile) {
		r.PasswordFile = filepath.Join(filepath.Dir(cfg.File), r.PasswordFile)
	}
	b, err := os.ReadFile(r.PasswordFile)
	if err != nil {
		probs.Add(cfg, "redis.password_file", fmt.Sprintf("read secret: %v", err))
		return
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		probs.Add(cfg, "redis.password_file", fmt.Sprintf("secret file %s is empty", r.PasswordFile))
		return
	}
	r.Password = s
}

// redis checks the store settings: one topology, described consistently.
func (c checker) redis(r Redis, s Store) {
	c.positive("redis.timeout", r.Timeout)
	if r.URL != "" {
		u, err := url.Parse(r.URL)
		if err != nil || !slices.Contains([]string{"redis", "rediss", "unix"}, u.Scheme) {
			c.add("redis.url", "want a redis://, rediss:// or unix:// URL, got %q", RedactURL(r.URL))
		}
	}
	if !r.Enabled() && strings.TrimSpace(s.Path) == "" {
		c.add("store.path", "must not be empty when no Redis is configured (redis.url and redis.addrs are empty: the embedded store is used)")
	}
	c.positive("store.retention", s.Retention)
	if strings.ContainsAny(r.Prefix, "{}") {
		c.add("redis.prefix", "must not contain { or }: the store adds its own hash tags so that each script stays in one Redis Cluster slot")
	}
	if r.Partitions < 1 || r.Partitions > 4096 {
		c.add("redis.partitions", "want 1 to 4096, got %d", r.Partitions)
	}
	if !r.Enabled() {
		for _, f := range []struct {
			field string
			set   bool
		}{
			{"redis.mode", r.Mode != ""}, {"redis.master_name", r.MasterName != ""}, {"redis.username", r.Username != ""},
			{"redis.password", r.Password != "" && r.PasswordFile == ""}, {"redis.password_file", r.PasswordFile != ""},
			{"redis.db", r.DB != 0}, {"redis.tls.enabled", r.TLS.Enabled},
		} {
			if f.set {
				c.add(f.field, "has no effect without redis.url or redis.addrs (the embedded store is used)")
			}
		}
		return
	}
	mode := r.Topology()
	if r.Mode != "" && !slices.Contains([]string{RedisStandalone, RedisSentinel, RedisCluster}, r.Mode) {
		c.add("redis.mode", "want standalone, sentinel or cluster, got %q", r.Mode)
		return
	}
	if r.URL != "" && len(r.Addrs) > 0 {
		c.add("redis.addrs", "set url (one server) or addrs, not both")
	}
	for i, a := range r.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			c.add(fmt.Sprintf("redis.addrs[%d]", i), "want host:port, got %q", a)
		}
	}
	if r.DB < 0 {
		c.add("redis.db", "must not be negative")
	}
	if r.WaitReplicas < 0 {
		c.add("redis.wait_replicas", "must not be negative")
	}
	switch mode {
	case RedisStandalone:
		if len(r.Addrs) > 1 {
			c.add("redis.addrs", "standalone mode takes one address, got %d (set mode: cluster for a Redis Cluster, or master_name for Sentinel)", len(r.Addrs))
		}
		if r.MasterName != "" {
			c.add("redis.master_name", "only used with mode: sentinel (mode is standalone)")
		}
	case RedisSentinel:
		if r.MasterName == "" {
			c.add("redis.master_name", "missing: mode sentinel needs the name the sentinels know the master by")
		}
		if r.URL != "" {
			c.add("redis.url", "mode sentinel takes the sentinels in addrs, not a url")
		} else if len(r.Addrs) == 0 {
			c.add("redis.addrs", "missing: mode sentinel needs the sentinels' host:port")
		}
	case RedisCluster:
		if r.DB != 0 {
			c.add("redis.db", "Redis Cluster has only database 0; remove db or use mode standalone or sentinel")
		}
		if r.MasterName != "" {
			c.add("redis.master_name", "only used with mode: sentinel (mode is cluster)")
		}
		if r.URL != "" {
			c.add("redis.url", "mode cluster takes seed nodes in addrs, not a url")
		}
		if r.WaitReplicas != 0 {
			c.add("redis.wait_replicas", "not supported with mode cluster (a claim spans several nodes)")
		}
	}
	t := r.TLS
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify) {
		c.add("redis.tls", "ca_file, cert_file, key_file and insecure_skip_verify need enabled: true")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		c.add("redis.tls", "set both cert_file and key_file, or neither")
	}
	for _, f := range [][2]string{{"redis.tls.ca_file", t.CAFile}, {"redis.tls.cert_file", t.CertFile}, {"redis.tls.key_file", t.KeyFile}} {
		if f[1] == "" {
			continue
		}
		if _, err := os.Stat(c.path(f[1])); err != nil {
			c.add(f[0], "%v", err)
		}
	}
}

// path resolves a path given in the config relative to its directory.
func (c checker) path(p string) string {
	if filepath.IsAbs(p) || c.cfg.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(c.cfg.File), p)
}
