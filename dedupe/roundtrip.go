package dedupe

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTripCounter is a go-redis hook that counts round trips: each command
// processed alone and each pipeline count one. Add it with
// client.AddHook(counter) to measure what a poll or a delivery costs.
type RoundTripCounter struct {
	n atomic.Int64
}

var _ redis.Hook = (*RoundTripCounter)(nil)

// Count returns the round trips counted so far.
func (c *RoundTripCounter) Count() int64 { return c.n.Load() }

// DialHook passes dials through; a dial is not a command.
func (c *RoundTripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one round trip per command.
func (c *RoundTripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts one round trip per pipeline.
func (c *RoundTripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}
