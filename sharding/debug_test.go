package sharding

import (
	"context"
	"testing"
	"time"
)

func (sc *shardCluster) shutdownAllNow() {
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		start := time.Now()
		err := sc.nodes[i].System.Shutdown(ctx)
		cancel()
		sc.t.Logf("DEBUG shutdown node%d: %v after %v", i, err, time.Since(start))
	}
}

var _ = testing.T{}
