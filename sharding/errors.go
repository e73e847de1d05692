package sharding

import (
	"errors"

	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/sharding/placement"
)

// Sentinel errors a user of this package can meet. Every error the package returns to a
// user wraps one of them, so callers can classify failures with errors.Is.
var (
	// ErrInvalidConfig reports a configuration that Validate rejects.
	ErrInvalidConfig = errors.New("sharding: invalid configuration")

	// ErrNoRegion reports that an allocation strategy was asked for a home while no
	// region can take a shard: none is registered, or every one is shutting down. It
	// is placement.ErrNoRegion.
	ErrNoRegion = placement.ErrNoRegion

	// ErrBufferFull reports a message that was not buffered because the region (or the
	// shard) already holds buffer-size messages waiting for a shard's home or for an
	// entity to start. The message goes to dead letters.
	ErrBufferFull = shardcore.ErrBufferFull
)
