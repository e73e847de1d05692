package management_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// TestReadyOnlyOnceUpAndStarted holds a node at Joining (min-nr-of-members 2): it is
// alive but not ready, for its membership, its region and its singleton managers;
// once a second node joins and the region has reached its coordinator it is ready.
func TestReadyOnlyOnceUpAndStarted(t *testing.T) {
	reg := testRegistry(t)
	mc := multinode.Start(t, multinode.Options{Nodes: 1, Registry: reg, NoWait: true,
		Configure: func(_ int, c *cluster.Config) { c.MinNrOfMembers = 2 }})
	n0 := startServices(t, reg, mc.Node(0), management.Config{})
	c := client(t)
	var h management.HealthView
	getJSON(t, c, n0.mgmt.URL()+"/alive", 200, &h)
	getJSON(t, c, n0.mgmt.URL()+"/ready", 503, &h)
	reasons := strings.Join(h.Reasons, "\n")
	for _, want := range []string{"this member is Joining", `entity type "Counter"`, `singleton "boss"`, `singleton "CounterCoordinator"`} {
		if !strings.Contains(reasons, want) {
			t.Errorf("the reasons do not mention %q:\n%s", want, reasons)
		}
	}

	mc.Add()
	startServices(t, reg, mc.Node(1), management.Config{})
	mc.AwaitAllUp(testkit.Dilated(20 * time.Second))
	awaitManagers(t, mc.Node(0))
	ask(t, n0.region, "x") // the region has registered with its coordinator
	h = management.HealthView{}
	getJSON(t, c, n0.mgmt.URL()+"/ready", 200, &h)
	if h.Status != "ready" || len(h.Reasons) != 0 {
		t.Fatalf("ready: %+v", h)
	}
}
