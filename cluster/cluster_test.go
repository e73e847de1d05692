package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/lease"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// withRemote returns a system with remoting started.
func withRemote(t *testing.T) *actor.System {
	t.Helper()
	sys := testkit.NewSystem(t)
	if _, err := remote.Start(sys, remote.Config{Registry: serialization.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	return sys
}

func testConfig() cluster.Config {
	return cluster.Config{Timing: cluster.TestTiming(), Downing: cluster.DowningConfig{StableAfter: 2 * time.Second}}
}

func TestStartNeedsRemotingAndRunsOnce(t *testing.T) {
	bare := testkit.NewSystem(t)
	if _, err := cluster.Start(bare, testConfig()); !errors.Is(err, cluster.ErrInvalidConfig) || !strings.Contains(err.Error(), "remote.Start") {
		t.Fatalf("Start without remoting: %v", err)
	}
	if cluster.Get(bare) != nil {
		t.Fatal("Get after a failed Start")
	}

	sys := withRemote(t)
	bad := testConfig()
	bad.GossipPort = -1
	if _, err := cluster.Start(sys, bad); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Fatalf("Start with a bad config: %v", err)
	}
	c, err := cluster.Start(sys, testConfig())
	if err != nil {
		t.Fatalf("Start after a failed Start: %v", err)
	}
	if cluster.Get(sys) != c {
		t.Fatal("Get does not return the running node")
	}
	if _, err := cluster.Start(sys, testConfig()); !errors.Is(err, cluster.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if cluster.Get(sys) != c {
		t.Fatal("a second Start replaced the node")
	}
}

func TestConfigValidate(t *testing.T) {
	store := lease.NewMemoryStore()
	l, _ := store.Lease(lease.Settings{LeaseName: "x", OwnerName: "a"})
	test := cluster.TestTiming()
	tests := []struct {
		name string
		edit func(c *cluster.Config)
		ok   bool
	}{
		{"zero config", func(*cluster.Config) {}, true},
		{"test timing, stable-after 2s", func(c *cluster.Config) { c.Timing, c.Downing.StableAfter = test, 2*time.Second }, true},
		{"gossip port", func(c *cluster.Config) { c.GossipPort = 70000 }, false},
		{"advertised port", func(c *cluster.Config) { c.AdvertiseGossipPort = -1 }, false},
		{"join timeout", func(c *cluster.Config) { c.JoinTimeout = -1 }, false},
		{"timing", func(c *cluster.Config) { c.Timing.AcceptableHeartbeatPause = -1 }, false},
		{"keyring key", func(c *cluster.Config) { c.Keyring = [][]byte{make([]byte, 15)} }, false},
		{"min members", func(c *cluster.Config) { c.MinNrOfMembers = -1 }, false},
		{"role with a comma", func(c *cluster.Config) { c.Roles = []string{"a,b"} }, false},
		{"unknown strategy", func(c *cluster.Config) { c.Downing.Strategy = 42 }, false},
		{"static-quorum without a quorum", func(c *cluster.Config) { c.Downing.Strategy = cluster.StaticQuorum }, false},
		{"lease-majority without a lease", func(c *cluster.Config) { c.Downing.Strategy = cluster.LeaseMajority }, false},
		{"lease-majority with a lease", func(c *cluster.Config) { c.Downing.Strategy, c.Downing.Lease = cluster.LeaseMajority, l }, true},
		{"negative margin", func(c *cluster.Config) { c.Downing.DownRemovalMargin = -time.Second }, false},
		{"stable-after below twice the detection spread", func(c *cluster.Config) { c.Downing.StableAfter = 5 * time.Second }, false},
		{"stable-after at Akka's 7s for five members", func(c *cluster.Config) { c.Downing.StableAfter = 7 * time.Second }, true},
		{"margin below the detection spread", func(c *cluster.Config) { c.Downing.DownRemovalMargin = time.Second }, false},
		{"test timing, stable-after 1s", func(c *cluster.Config) { c.Timing, c.Downing.StableAfter = test, time.Second }, false},
		{"down-all-when-unstable off", func(c *cluster.Config) { c.Downing.DownAllWhenUnstable = -1 }, true},
	}
	for _, tt := range tests {
		var c cluster.Config
		tt.edit(&c)
		err := c.Validate()
		if tt.ok && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !tt.ok && !errors.Is(err, cluster.ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

func TestDetectionSpread(t *testing.T) {
	for _, tt := range []struct {
		name   string
		timing cluster.Timing
		lo, hi time.Duration
	}{
		{"defaults", cluster.Timing{}, 2500 * time.Millisecond, 3 * time.Second},
		{"TestTiming", cluster.TestTiming(), 600 * time.Millisecond, 700 * time.Millisecond},
	} {
		if s := tt.timing.DetectionSpread(); s < tt.lo || s > tt.hi {
			t.Errorf("%s: DetectionSpread %v, want %v to %v", tt.name, s, tt.lo, tt.hi)
		}
	}
}

func TestParseStrategy(t *testing.T) {
	for _, s := range []cluster.Strategy{cluster.KeepMajority, cluster.StaticQuorum, cluster.KeepOldest, cluster.DownAll, cluster.LeaseMajority} {
		got, err := cluster.ParseStrategy(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStrategy(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := cluster.ParseStrategy("keep-referee"); !errors.Is(err, cluster.ErrInvalidConfig) {
		t.Errorf("unknown strategy: %v", err)
	}
}

func TestWaitUpOnAFoundingNode(t *testing.T) {
	sys := withRemote(t)
	c, err := cluster.Start(sys, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	c.RegisterOnMemberUp(func() { close(ran) })
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := c.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	<-ran
	if jp := c.JoinProgress(); !jp.Joined || jp.GaveUp || jp.LastError != nil {
		t.Errorf("JoinProgress %+v", jp)
	}
	late := make(chan struct{})
	c.RegisterOnMemberUp(func() { close(late) }) // already Up: runs at once
	<-late
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.Stopped()
	if err := c.WaitUp(ctx); err != nil {
		t.Errorf("WaitUp after Up and leave: %v", err)
	}
	if err := c.Leave(ctx); err != nil {
		t.Errorf("second Leave: %v", err)
	}
}

func TestWaitUpReportsJoining(t *testing.T) {
	sys := withRemote(t)
	cfg := testConfig()
	cfg.SeedNodes = []string{"127.0.0.1:1"} // nobody there
	cfg.JoinRetryInterval = 20 * time.Millisecond
	cfg.JoinTimeout = 300 * time.Millisecond
	c, err := cluster.Start(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	err = c.WaitUp(ctx)
	if !errors.Is(err, cluster.ErrJoinFailed) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("WaitUp = %v, want ErrJoinFailed naming the seed", err)
	}
	jp := c.JoinProgress()
	if jp.Joined || !jp.GaveUp || jp.Attempts < 2 || jp.LastError == nil {
		t.Fatalf("JoinProgress %+v", jp)
	}
	if st := c.State(); len(st.Members) != 1 || st.Members[0].Status != cluster.Joining {
		t.Fatalf("state %+v", st)
	}
}

func TestWaitUpEndsWithTheContextAndTheNode(t *testing.T) {
	sys := withRemote(t)
	cfg := testConfig()
	cfg.SeedNodes = []string{"127.0.0.1:1"}
	cfg.JoinRetryInterval = 20 * time.Millisecond
	c, err := cluster.Start(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = c.WaitUp(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not joined") {
		t.Fatalf("WaitUp = %v, want the deadline with the join error", err)
	}
	if err := c.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitUp(context.Background()); !errors.Is(err, cluster.ErrStopped) {
		t.Fatalf("WaitUp after the node stopped = %v, want ErrStopped", err)
	}
}

func TestSubscribeGetsTheStateFirst(t *testing.T) {
	sys := withRemote(t)
	c, err := cluster.Start(sys, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := testkit.NewProbe(t, sys)
	if err := c.Subscribe(p.Ref()); err != nil {
		t.Fatal(err)
	}
	st := testkit.ExpectMsgType[cluster.CurrentClusterState](p)
	if len(st.Members) != 1 || st.Members[0].Unique != c.SelfUniqueAddress() {
		t.Fatalf("state %+v", st)
	}
	if err := c.Unsubscribe(p.Ref()); err != nil {
		t.Fatal(err)
	}
}
