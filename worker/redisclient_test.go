package worker

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/feedworker/feedworker/config"
)

// TestRedisClientBuffers checks the connection buffers the worker asks of
// go-redis, and that a size given in redis.url stands.
func TestRedisClientBuffers(t *testing.T) {
	for _, tt := range []struct {
		url          string
		wantPipeRead int
	}{
		{"redis://127.0.0.1:6379/0", redisPipelineBufferSize},
		{"redis://127.0.0.1:6379/0?pipeline_read_buffer_size=65536", 65536},
	} {
		c, err := RedisClient(config.Redis{URL: tt.url})
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		o := c.(*redis.Client).Options()
		got := []int{o.ReadBufferSize, o.WriteBufferSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize}
		want := []int{redisBufferSize, redisBufferSize, tt.wantPipeRead, redisPipelineBufferSize}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: buffer sizes (read, write, pipeline read, pipeline write) %v, want %v", tt.url, got, want)
				break
			}
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
