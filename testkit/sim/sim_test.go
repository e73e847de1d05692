package sim_test

import (
	"os"

	"go.uber.org/zap"
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit/sim"
)

// TestSimulation runs the CI seeds (or TROUPE_SIM_SEED / TROUPE_SIM_SEEDS).
func TestSimulation(t *testing.T) {
	for _, seed := range sim.Seeds(t, 2) {
		start := time.Now()
		opts := sim.Options{Seed: seed}
		if os.Getenv("TROUPE_SIM_LOG") != "" {
			opts.Logger = zap.Must(zap.NewDevelopment())
		}
		rep := sim.Run(t, opts)
		t.Logf("seed %d: %v virtual in %v, converged %v after the last event, %d acked, %d failed",
			seed, rep.Virtual, time.Since(start).Round(time.Millisecond), rep.Converged, rep.Acked, rep.Failed)
	}
}
