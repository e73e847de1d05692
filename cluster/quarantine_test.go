package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap/zapcore"
)

// A leaving member is removed by the others as soon as serf spreads its leave, and
// they quarantine it; its heartbeats during the rest of its leave are refused. That is
// expected, not a downing: the member leaves as usual and logs no warning about it.
// (A member refused so while it is not leaving downs itself: see
// testkit/multinode's TestMemberDownedAcrossACutLinkStopsPromptly.)
func TestALeavingMemberRefusedByTheOthersIsNotDowned(t *testing.T) {
	timing := cluster.TestTiming()
	// Long enough that the leaver heartbeats the others after they removed it.
	timing.LeavePropagateDelay = time.Second
	a := node(t, "a", cluster.Config{Timing: timing})
	b := node(t, "b", cluster.Config{Timing: timing, SeedNodes: []string{a.GossipAddress()}})
	awaitUpMembers(t, a, a, b)
	awaitUpMembers(t, b, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	await(t, a, func(st cluster.CurrentClusterState) bool { return len(st.Members) == 1 })
	refused := false
	for _, l := range b.logs.All() {
		if l.Level >= zapcore.WarnLevel {
			t.Errorf("b logged %s %q during a graceful leave", l.Level, l.Message)
		}
		err, _ := l.ContextMap()["error"].(string)
		refused = refused || strings.Contains(err, "this incarnation is quarantined") && l.Time.Before(left)
	}
	if !refused {
		t.Fatalf("b was not refused during its leave: the test shows nothing; logged: %v", b.logs.All())
	}
}
