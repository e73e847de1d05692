package multinode_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

func TestWrongGossipKeyCannotJoin(t *testing.T) {
	good, bad := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	c := multinode.Start(t, multinode.Options{
		Nodes: 3,
		Configure: func(i int, cfg *cluster.Config) {
			cfg.Keyring = [][]byte{good}
			if i == 3 {
				cfg.Keyring = [][]byte{bad}
			}
		},
	})
	p := subscribe(t, c, 0)
	aboutIntruder := aboutNewMember(c) // before the intruder is one of c's nodes
	intruder := c.Add()
	p.ExpectNoMsgMatching(time.Second, aboutIntruder)
	for _, i := range []int{0, 1, 2} {
		if n := len(c.Node(i).Cluster.State().Members); n != 3 {
			t.Errorf("node %d sees %d members", i, n)
		}
	}
	if n := len(intruder.Cluster.State().Members); n != 1 {
		t.Errorf("the intruder sees %d members", n)
	}
}

func TestMemberWithMalformedTagsIsIgnored(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 2})
	p := subscribe(t, c, 0)
	conf := serf.DefaultConfig()
	conf.NodeName = "stranger"
	conf.Tags = map[string]string{membership.TagVersion: "1", membership.TagAddr: "troupe://x@127.0.0.1:1", membership.TagUID: "not a number"}
	conf.MemberlistConfig.BindAddr = "127.0.0.1"
	conf.MemberlistConfig.BindPort = 0
	conf.MemberlistConfig.AdvertiseAddr = "127.0.0.1"
	conf.MemberlistConfig.LogOutput = &bytes.Buffer{}
	conf.LogOutput = &bytes.Buffer{}
	s, err := serf.Create(conf)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if _, err := s.Join([]string{c.Node(0).Cluster.GossipAddress()}, true); err != nil {
		t.Fatal(err)
	}
	p.ExpectNoMsgMatching(500*time.Millisecond, aboutNewMember(c))
	if n := len(c.Node(0).Cluster.State().Members); n != 2 {
		t.Errorf("members = %d, want 2", n)
	}
	_ = s.Leave()
}

func TestRemovedMemberTerminatesRemoteWatches(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	target, err := c.Node(2).System.Spawn(actor.PropsFunc(func(actor.Context) {}), "target")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := c.Node(0).System.Resolve(target.URI())
	if err != nil {
		t.Fatal(err)
	}
	p := testkit.NewProbe(t, c.Node(0).System)
	p.Watch(ref)
	c.Crash(2)
	term := p.ExpectTerminated(ref, testkit.Dilated(10*time.Second))
	if !term.AddressTerminated {
		t.Error("Terminated of a removed member's actor does not say address terminated")
	}
	if q := c.Node(0).Remote.Stats().Quarantines; q != 1 {
		t.Errorf("quarantines = %d, want 1", q)
	}
}

func TestSecondNodeOnALiveMembersAddressIsRejected(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 2})
	p := subscribe(t, c, 0)
	victim := c.Node(1)

	// An impostor: the same system name, advertising the same remote address.
	sys, err := actor.New(victim.System.Name(), actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdownSystem(t, sys)
	_, err = remote.Start(sys, remote.Config{Registry: serialization.NewRegistry(), AdvertisedPort: victim.Remote.Address().Port})
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := cluster.Start(sys, cluster.Config{
		SeedNodes:         []string{c.Node(0).Cluster.GossipAddress()},
		JoinRetryInterval: 50 * time.Millisecond,
		JoinTimeout:       time.Second,
		Timing:            cluster.TestTiming(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if impostor.SelfUniqueAddress().Addr != victim.Cluster.SelfUniqueAddress().Addr {
		t.Fatalf("impostor address %s", impostor.SelfUniqueAddress().Addr)
	}
	p.ExpectNoMsgMatching(time.Second, aboutNewMember(c))
	for _, i := range []int{0, 1} {
		st := c.Node(i).Cluster.State()
		if len(st.Members) != 2 {
			t.Fatalf("node %d sees %d members", i, len(st.Members))
		}
		for _, m := range st.Members {
			if m.Unique == impostor.SelfUniqueAddress() {
				t.Fatalf("node %d admitted the impostor", i)
			}
		}
	}
}

func shutdownSystem(t *testing.T, sys *actor.System) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

func TestANodeThatCannotJoinStaysJoining(t *testing.T) {
	sys, err := actor.New("lonely", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdownSystem(t, sys)
	_, err = remote.Start(sys, remote.Config{Registry: serialization.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(sys, cluster.Config{
		SeedNodes:         []string{"127.0.0.1:1"}, // nobody there
		JoinRetryInterval: 20 * time.Millisecond,
		Timing:            cluster.TestTiming(),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := testkit.NewProbe(t, sys)
	c.Subscribe(p.Ref())
	st := testkit.ExpectMsgType[cluster.CurrentClusterState](p)
	if len(st.Members) != 1 || st.Members[0].Status != cluster.Joining {
		t.Fatalf("state %+v", st)
	}
	// It never moves itself Up (and so never claims to be the oldest) on its own.
	p.ExpectNoMsgMatching(500*time.Millisecond, func(msg any) bool {
		_, up := msg.(cluster.MemberUp)
		return up
	})
}

// aboutNewMember matches membership events about a member that is not one of c's
// nodes as they are now, and ignores the rest (a slow test machine may see a member
// flap unreachable and back).
func aboutNewMember(c *multinode.Cluster) func(any) bool {
	known := make(map[cluster.UniqueAddress]bool)
	for _, n := range c.Nodes() {
		known[n.Cluster.SelfUniqueAddress()] = true
	}
	return func(msg any) bool {
		ev, ok := msg.(cluster.Event)
		if !ok {
			return false
		}
		u := memberOf(ev)
		return u != (cluster.UniqueAddress{}) && !known[u]
	}
}
