package multinode_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// A test that partitions five nodes 3|2 and checks that the majority survives.
func Example() {
	test := func(t *testing.T) {
		c := multinode.Start(t, multinode.Options{Nodes: 5})
		c.Partition([]int{0, 1, 2}, []int{3, 4})
		<-c.Node(3).Cluster.Stopped() // the minority downs itself
		c.Await(0, 10*time.Second, "three members", func(st cluster.CurrentClusterState) bool {
			return len(st.Members) == 3
		})
		c.Heal()
	}
	_ = test
}
