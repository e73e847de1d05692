package cluster

import (
	"testing"

	"github.com/troupe-go/troupe/internal/sbr"
)

// The configuration's strategies are converted to the resolver's by number.
func TestStrategiesMatchTheResolver(t *testing.T) {
	for s, want := range map[Strategy]sbr.Strategy{
		KeepMajority: sbr.KeepMajority, StaticQuorum: sbr.StaticQuorum, KeepOldest: sbr.KeepOldest,
		DownAll: sbr.DownAll, LeaseMajority: sbr.LeaseMajority,
	} {
		if sbr.Strategy(s) != want || s.String() != want.String() {
			t.Errorf("%v is %v in the resolver, want %v", s, sbr.Strategy(s), want)
		}
	}
}
