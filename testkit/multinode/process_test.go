package multinode_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Three node processes form a cluster; one is killed with SIGKILL, and the split-brain
// resolver on the other two downs and removes it. Then one survivor leaves gracefully.
func TestProcessKilledWithSIGKILLIsRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cluster example and runs it as OS processes")
	}
	bin := multinode.BuildNode(t)
	args := []string{"-timing", "test", "-stable-after", "1s"}
	a := multinode.StartNode(t, bin, args...)
	b := multinode.StartNode(t, bin, append(args, "-seed", a.Gossip)...)
	c := multinode.StartNode(t, bin, append(args, "-seed", a.Gossip)...)
	nodes := []*multinode.NodeProcess{a, b, c}

	timeout := testkit.Dilated(10 * time.Second)
	up := make(map[string]bool)
	a.WaitFor(timeout, "all three members up", func(line string) bool {
		for _, n := range nodes {
			if a.IsEvent(line, "up", n.HostPort) {
				up[n.HostPort] = true
			}
		}
		return len(up) == len(nodes)
	})

	c.Kill()
	for _, n := range []*multinode.NodeProcess{a, b} {
		n.WaitEvent(timeout, "unreachable", c.HostPort)
		n.WaitEvent(timeout, "downed", c.HostPort)
		removed := n.WaitEvent(timeout, "removed", c.HostPort)
		if !strings.HasSuffix(removed, "(was Down)") {
			t.Errorf("%s: %q, want removed after Down", n.HostPort, removed)
		}
	}

	if err := b.Stop(timeout); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	b.WaitFor(timeout, "stopped", func(line string) bool { return line == "["+b.HostPort+"] stopped" })
	for _, kind := range []string{"leaving", "exiting", "removed"} {
		a.WaitEvent(timeout, kind, b.HostPort)
	}
}
