package worker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/config"
)

// redisRetries is how often go-redis retries a command that met a broken
// connection or a timeout: once, so that a connection a restarted server
// closed is replaced without an error, while a frozen server costs a call
// about twice redis.timeout, not four times (go-redis's default of 3).
const redisRetries = 1

// RedisClient builds the go-redis client the config describes: a Client
// for one server, a failover client through Sentinel, or a ClusterClient.
// Every store operation then goes through the redis.UniversalClient
// interface, whatever the topology.
func RedisClient(r config.Redis) (redis.UniversalClient, error) {
	tc, err := redisTLS(r)
	if err != nil {
		return nil, err
	}
	// redis.timeout bounds every step of every call: a frozen server is
	// an error within it, never a call that hangs (store health).
	t := r.Timeout.D()
	if t <= 0 {
		t = config.Default().Redis.Timeout.D()
	}
	// Sentinel and Cluster share their options; go-redis derives each
	// client's own from them.
	u := &redis.UniversalOptions{
		Addrs:                   r.Addrs,
		MasterName:              r.MasterName,
		SentinelUsername:        r.Username,
		SentinelPassword:        r.Password,
		Username:                r.Username,
		Password:                r.Password,
		DB:                      r.DB,
		TLSConfig:               tc,
		DialTimeout:             t,
		ReadTimeout:             t,
		WriteTimeout:            t,
		PoolTimeout:             t,
		MaxRetries:              redisRetries,
		ReadBufferSize:          redisBufferSize,
		WriteBufferSize:         redisBufferSize,
		PipelineReadBufferSize:  redisPipelineBufferSize,
		PipelineWriteBufferSize: redisPipelineBufferSize,
	}
	switch r.Topology() {
	case config.RedisSentinel:
		return redis.NewFailoverClient(u.Failover()), nil
	case config.RedisCluster:
		return redis.NewClusterClient(u.Cluster()), nil
	}
	var opts *redis.Options
	if r.URL != "" {
		if opts, err = redis.ParseURL(r.URL); err != nil {
			return nil, fmt.Errorf("redis.url: %w", redactErr(err, r.URL))
		}
	} else {
		opts = &redis.Options{Addr: r.Addrs[0], DB: r.DB}
	}
	if r.Username != "" {
		opts.Username = r.Username
	}
	if r.Password != "" {
		opts.Password = r.Password
	}
	if tc != nil {
		if opts.TLSConfig != nil {
			tc.ServerName = opts.TLSConfig.ServerName
		}
		opts.TLSConfig = tc
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = t, t, t, t
	opts.MaxRetries = redisRetries
	// A size given in the URL's query (go-redis reads pipeline_read_buffer_size
	// there) stands.
	for _, b := range []struct {
		size *int
		want int
	}{
		{&opts.ReadBufferSize, redisBufferSize},
		{&opts.WriteBufferSize, redisBufferSize},
		{&opts.PipelineReadBufferSize, redisPipelineBufferSize},
		{&opts.PipelineWriteBufferSize, redisPipelineBufferSize},
	} {
		if *b.size == 0 {
			*b.size = b.want
		}
	}
	return redis.NewClient(opts), nil
}

// The buffers of each Redis connection. go-redis gives every connection
// 32 KiB to read and 32 KiB to write, and each of its pipeline pool (up to
// 10) 128 KiB each way: 2.5 MiB when the pool is full, a fixed part of
// the worker's memory whatever the number of feeds. The worker's answers
// are small (an outbox claim is a few KiB) and its large pipelines (a
// pass's leases) only flush more often with a smaller buffer; a value
// larger than the buffer is read and written past it, not through it. At
// 16 and 32 KiB the full pools were still 1.4 MB of the live heap at the
// peak of a 5,000-feed pass (goal 3).
const (
	redisBufferSize         = 8 << 10
	redisPipelineBufferSize = 16 << 10
)

// redisTLS is the TLS config of redis.tls, or nil when it is off.
func redisTLS(r config.Redis) (*tls.Config, error) {
	t := r.TLS
	if !t.Enabled {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, for tests
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis.tls.ca_file %s: no PEM certificate in it", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redis.tls.cert_file and key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if len(r.Addrs) > 0 {
		if host, _, err := net.SplitHostPort(r.Addrs[0]); err == nil && net.ParseIP(host) == nil {
			tc.ServerName = host
		}
	}
	return tc, nil
}

// RedisProblem explains an error from Redis in terms of the setting to
// fix: what the operator sees at start, in the logs and in /readyz. The
// cause stays reachable with errors.Is and errors.As.
func RedisProblem(r config.Redis, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	lower := strings.ToLower(msg)
	var setting, why string
	var opErr *net.OpError
	var recErr tls.RecordHeaderError
	switch {
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") || strings.Contains(lower, "invalid password") ||
		strings.Contains(lower, "invalid username-password"):
		setting, why = "redis.password", "Redis refused the credentials (check redis.username and redis.password or password_file)"
	case strings.Contains(msg, "cluster support disabled"):
		setting, why = "redis.mode", "mode is cluster, but the server is not a Redis Cluster node (cluster support disabled); use mode standalone or sentinel, or point addrs at cluster nodes"
	case strings.Contains(lower, "moved ") || strings.Contains(msg, "CLUSTERDOWN"):
		setting, why = "redis.mode", "the server is a Redis Cluster node; set mode: cluster and list the nodes in addrs"
	case strings.Contains(lower, "sentinel") && (strings.Contains(lower, "master") || strings.Contains(lower, "unreachable")):
		setting, why = "redis.master_name", fmt.Sprintf("no sentinel at %s gives an address for master %q (a wrong name, or the sentinels are unreachable)", strings.Join(r.Addrs, ","), r.MasterName)
	case errors.As(err, &recErr) || strings.Contains(lower, "tls: ") || strings.Contains(lower, "first record does not look like a tls handshake"):
		setting, why = "redis.tls", "the TLS handshake failed: is the port a TLS port, and the certificate trusted?"
	case r.TLS.Enabled && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(lower, "i/o timeout") || strings.Contains(lower, "connection reset") || strings.Contains(lower, "eof")):
		setting, why = "redis.tls", "no TLS answer in time: the server may not speak TLS on that port"
	case errors.As(err, &opErr):
		setting, why = "redis.addrs", "cannot reach Redis"
		if r.URL != "" {
			setting = "redis.url"
		}
	default:
		return fmt.Errorf("redis (%s): %w", r.Describe(), err)
	}
	return &redisProblem{msg: fmt.Sprintf("%s: %s (%s): %s", setting, why, r.Describe(), msg), err: err}
}

type redisProblem struct {
	msg string
	err error
}

func (e *redisProblem) Error() string { return e.msg }
func (e *redisProblem) Unwrap() error { return e.err }

// checkRedis proves the configured Redis answers as the topology it is
// configured as: a ping, and for a standalone or Sentinel server that it
// is not a Cluster node (its scripts would be refused key by key).
func checkRedis(ctx context.Context, r config.Redis, c redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return RedisProblem(r, err)
	}
	if r.Topology() == config.RedisCluster {
		return nil
	}
	info, err := c.Info(ctx, "cluster").Result()
	if err == nil && strings.Contains(info, "cluster_enabled:1") {
		return &redisProblem{msg: fmt.Sprintf("redis.mode: the server at %s is a Redis Cluster node but mode is %s; set mode: cluster and list the nodes in addrs",
			r.Describe(), r.Topology()), err: errors.New("cluster_enabled:1")}
	}
	return nil
}
