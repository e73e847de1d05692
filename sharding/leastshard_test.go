package sharding

import (
	"errors"
	"math"
	"testing"
)

func TestLeastShardConfigValidate(t *testing.T) {
	bad := []LeastShardConfig{
		{RebalanceAbsoluteLimit: -1},
		{RebalanceRelativeLimit: -0.1},
		{RebalanceRelativeLimit: 1.5},
		{RebalanceRelativeLimit: math.NaN()},
		{RebalanceThreshold: -1},
		{MaxSimultaneousRebalance: -2},
	}
	for _, c := range bad {
		if _, err := NewLeastShardStrategy(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig", c, err)
		}
	}
	if _, err := NewLeastShardStrategy(LeastShardConfig{}); err != nil {
		t.Fatalf("the zero config: %v", err)
	}
}
