package multinode_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// A probe memberlist started before serf shut down waits out its timeouts (up
		// to eight probe intervals when the node's health score is low, as it is after
		// partitions) and then ends; serf's Shutdown does not wait for it.
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"),
	)
}
