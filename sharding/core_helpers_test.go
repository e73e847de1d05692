package sharding

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// The test nodes and regions of the simulations, as internal/shardcore's tests name
// them.

// nodeAddr is the address of test node i.
func nodeAddr(i int) string { return fmt.Sprintf("troupe://sys@10.0.0.%d:2552", i) }

// reg is the region on test node i.
func reg(i int) RegionID { return RegionID(nodeAddr(i) + "/system/sharding/t#1") }

// testNode is test node i: Up, age i, version "1".
func testNode(i int) NodeInfo {
	return NodeInfo{Address: cluster.UniqueAddress{Addr: nodeAddr(i), UID: 1}, Status: cluster.Up, AppVersion: "1", UpNumber: int64(i)}
}

// testNodes are test nodes 1 to n.
func testNodes(n int) []NodeInfo {
	var out []NodeInfo
	for i := 1; i <= n; i++ {
		out = append(out, testNode(i))
	}
	return out
}

// t0 is the simulations' start time.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
