package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// testToken is the bearer token of the test server that enables writes.
const testToken = "test-token-0123456789"

// entity answers any string with its entity ID.
type entity struct{}

func (entity) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(string); ok {
		_ = ctx.Respond(string(sharding.EntityIDOf(ctx)))
	}
}

// testNode is one node of the test cluster with its services.
type testNode struct {
	*multinode.Node
	region actor.Ref
	url    string // its management server's
}

// startServices starts distributed data, sharding (entity type Counter), the
// singleton "boss" and a management server (cfg, on a free port) on n.
func startServices(t *testing.T, reg *serialization.Registry, n *multinode.Node, cfg management.Config) *testNode {
	t.Helper()
	if _, err := ddata.Start(t.Context(), n.System, ddata.Config{Cluster: n.Cluster, Registry: reg, GossipInterval: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	s, err := sharding.Start(n.System, sharding.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Counter", sharding.EntityConfig{
		Entity:         actor.PropsOf(func() actor.Actor { return entity{} }),
		NumberOfShards: 10,
		Timings:        sharding.Timings{RetryInterval: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := singleton.Start(n.System, singleton.Config{Name: "boss",
		Props:                 actor.PropsOf(func() actor.Actor { return actor.ReceiveFunc(func(actor.Context) {}) }),
		HandOverRetryInterval: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	cfg.Address = "127.0.0.1:0"
	m, err := management.Start(n.System, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testNode{Node: n, region: region, url: m.URL()}
}

// awaitManagers waits until every singleton manager of n knows where its singleton runs.
func awaitManagers(t *testing.T, n *multinode.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	for _, m := range singleton.Managers(n.System) {
		if _, err := m.AwaitStatus(ctx, func(s singleton.Status) bool {
			return s.State != singleton.StateStart && s.Oldest != (cluster.UniqueAddress{})
		}); err != nil {
			t.Fatalf("node %d: singleton %s: %v", n.Index, m.Name(), err)
		}
	}
}

// askEntity asks entity id through region and checks its answer.
func askEntity(t *testing.T, region actor.Ref, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	got, err := actor.Ask[string](ctx, region, sharding.Envelope{EntityID: sharding.EntityID(id), Message: "who"})
	if err != nil || got != id {
		t.Fatalf("entity %s answered %q, %v", id, got, err)
	}
}

// rowOf returns the line of a table that starts with key, or "".
func rowOf(table, key string) string {
	for l := range strings.Lines(table) {
		if strings.HasPrefix(l, key) {
			return strings.TrimRight(l, "\n")
		}
	}
	return ""
}

// decode decodes a -json run's output into v.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("-json printed %q: %v", r.stdout, err)
	}
}

// TestAgainstARunningCluster runs every command of troupe against a real three-node
// cluster with sharding and a singleton, a management server on every node (writes
// enabled, with a token, on node 0 only): it reads the members, shards and
// singletons, follows the events while node 2 leaves and node 1 is downed through
// troupe, and checks the refusals and the exit code of a node that cannot be reached.
func TestAgainstARunningCluster(t *testing.T) {
	t.Setenv(envURL, "")
	t.Setenv(envToken, "")
	reg := serialization.NewRegistry()
	if err := serialization.Register[string](reg, "test.string"); err != nil {
		t.Fatal(err)
	}
	mc := multinode.Start(t, multinode.Options{Nodes: 3, Registry: reg})
	nodes := []*testNode{
		startServices(t, reg, mc.Node(0), management.Config{EnableWrites: true, Token: testToken}),
		startServices(t, reg, mc.Node(1), management.Config{}),
		startServices(t, reg, mc.Node(2), management.Config{}),
	}
	for _, n := range nodes {
		awaitManagers(t, n.Node)
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, id := range ids {
		askEntity(t, nodes[i%3].region, id)
	}
	addr := func(i int) string { return mc.Node(i).Cluster.SelfUniqueAddress().Addr }
	oldest := mc.Node(0).Cluster.State().Oldest.Unique.Addr
	u0 := nodes[0].url
	ctx := context.Background()
	cli := func(args ...string) result { return runCLI(ctx, append([]string{"-url", u0}, args...)...) }

	t.Run("members", func(t *testing.T) {
		r := cli("members")
		r.expect(t, "members", exitOK)
		if !strings.HasPrefix(r.stdout, "NODE ") {
			t.Fatalf("members:\n%s", r.stdout)
		}
		for i := range nodes {
			row := rowOf(r.stdout, addr(i))
			if f := strings.Fields(row); len(f) < 5 || f[1] != "Up" || f[4] != "yes" ||
				strings.Contains(row, "answered") != (i == 0) || strings.Contains(row, "oldest") != (addr(i) == oldest) {
				t.Fatalf("node %d's row %q in\n%s", i, row, r.stdout)
			}
		}
		var v management.MembersView
		r = cli("-json", "members")
		r.expect(t, "members -json", exitOK)
		decode(t, r, &v)
		if len(v.Members) != 3 || v.SelfNode != addr(0) || v.Oldest != oldest {
			t.Fatalf("members -json: %+v", v)
		}
	})

	t.Run("member", func(t *testing.T) {
		a := addr(1)
		for _, arg := range []string{a, strings.TrimPrefix(a, "troupe://"), a[strings.Index(a, "@")+1:]} {
			r := cli("member", arg)
			r.expect(t, "member "+arg, exitOK)
			if rowOf(r.stdout, "node:") != "node:       "+a || rowOf(r.stdout, "status:") != "status:     Up" {
				t.Fatalf("member %s:\n%s", arg, r.stdout)
			}
		}
		var v management.MemberView
		r := cli("member", "-json", a)
		decode(t, r, &v)
		if v.Node != a || v.NodeUID != fmt.Sprint(mc.Node(1).Cluster.SelfUniqueAddress().UID) {
			t.Fatalf("member -json: %+v", v)
		}
		cli("member", "troupe://node9@127.0.0.1:1").expect(t, "unknown member", exitNotFound, "no member at troupe://node9@127.0.0.1:1")
		cli("member", "127.0.0.1:1").expect(t, "unknown host:port", exitNotFound, "no member at 127.0.0.1:1")
	})

	t.Run("shards", func(t *testing.T) {
		r := cli("shards")
		r.expect(t, "shards", exitOK)
		checkRendered(t, "entity types", r.stdout, lines("ENTITY TYPE  REGION", "Counter      region"))

		r = cli("shards", "Counter")
		r.expect(t, "shards Counter", exitOK)
		if f := strings.Fields(rowOf(r.stdout, "total")); len(f) != 3 || f[2] != fmt.Sprint(len(ids)) {
			t.Fatalf("shards Counter:\n%s", r.stdout)
		}
		for i := range nodes {
			if rowOf(r.stdout, addr(i)) == "" {
				t.Fatalf("shards Counter has no row of node %d:\n%s", i, r.stdout)
			}
		}
		var st management.ClusterShardsView
		r = cli("-json", "shards", "Counter")
		decode(t, r, &st)
		if len(st.Regions) != 3 || st.TypeName != "Counter" {
			t.Fatalf("shards -json Counter: %+v", st)
		}
		r = cli("shards", "-detail", "Counter")
		r.expect(t, "shards -detail", exitOK)
		if n := strings.Count(r.stdout, "\n") - 1; n < 1 || n > len(ids) {
			t.Fatalf("shards -detail lists %d shards for %d entities:\n%s", n, len(ids), r.stdout)
		}
		local := 0
		for _, n := range nodes {
			r := runCLI(ctx, "-url", n.url, "shards", "-local", "Counter")
			r.expect(t, "shards -local", exitOK)
			var count int
			if _, err := fmt.Sscanf(rowOf(r.stdout, "total"), "total %d", &count); err != nil {
				t.Fatalf("node %d: shards -local:\n%s", n.Index, r.stdout)
			}
			local += count
		}
		if local != len(ids) {
			t.Fatalf("the nodes host %d entities, want %d", local, len(ids))
		}
		cli("shards", "Nope").expect(t, "unknown type", exitNotFound, `entity type "Nope" is not started`)
	})

	t.Run("singletons", func(t *testing.T) {
		for _, n := range nodes {
			r := runCLI(ctx, "-url", n.url, "singletons")
			r.expect(t, "singletons", exitOK)
			for _, name := range []string{"CounterCoordinator", "boss"} {
				if f := strings.Fields(rowOf(r.stdout, name+" ")); len(f) != 3 || f[1] != oldest {
					t.Fatalf("node %d: singletons:\n%s", n.Index, r.stdout)
				}
			}
		}
	})

	// The events of node 0 while node 2 leaves and node 1 is downed.
	evCtx, stopEvents := context.WithCancel(context.Background())
	defer stopEvents()
	evOut, evErr := newSyncWriter(), newSyncWriter()
	evDone := runAsync(evCtx, evOut, evErr, "-url", u0, "events", "-type", "member-left,member-removed,member-downed")
	evErr.await(t, "following the events of "+u0)

	// Refusals first: they change nothing.
	cli("leave", addr(2)).expect(t, "leave without a token", exitRefused, "needs the node's token", "-token")
	cli("leave", "-token", "not-the-token-at-all", addr(2)).expect(t, "leave with a wrong token", exitRefused, "refused the token")
	runCLI(ctx, "-url", nodes[1].url, "-token", testToken, "down", addr(2)).
		expect(t, "down where writes are disabled", exitRefused, "refused (403)", "disabled")
	if n := len(mc.Node(0).Cluster.State().Members); n != 3 {
		t.Fatalf("the refused requests changed the cluster: %d members", n)
	}

	t.Setenv(envToken, testToken)
	r := cli("leave", addr(2))
	r.expect(t, "leave", exitOK)
	checkRendered(t, "leave", r.stdout, lines("Leaving "+addr(2)))
	evOut.await(t, "member-left  "+addr(2))
	evOut.await(t, "member-removed  "+addr(2)+" Removed (was Exiting)")
	select {
	case <-mc.Node(2).System.Terminated():
	case <-time.After(testkit.Dilated(30 * time.Second)):
		t.Fatal("node 2 did not leave")
	}
	runCLI(ctx, "-url", nodes[2].url, "members").expect(t, "a node that left", exitUnreachable, "cannot reach the management server at "+nodes[2].url)

	hostPort := addr(1)[strings.Index(addr(1), "@")+1:]
	r = cli("down", hostPort)
	r.expect(t, "down", exitOK)
	checkRendered(t, "down", r.stdout, lines("Downing "+addr(1)))
	evOut.await(t, "member-downed  "+addr(1))
	select {
	case <-mc.Node(1).Cluster.Stopped():
	case <-time.After(testkit.Dilated(20 * time.Second)):
		t.Fatal("node 1 did not learn it was downed")
	}
	r = cli("members")
	r.expect(t, "members after leave and down", exitOK)
	if rowOf(r.stdout, addr(2)) != "" || strings.Contains(rowOf(r.stdout, addr(1)), " Up ") {
		t.Fatalf("members after node 2 left and node 1 was downed:\n%s", r.stdout)
	}

	stopEvents()
	select {
	case code := <-evDone:
		if code != exitOK {
			t.Fatalf("events ended with %d when interrupted, want 0", code)
		}
	case <-time.After(testkit.Dilated(10 * time.Second)):
		t.Fatal("events did not end when interrupted")
	}
}
