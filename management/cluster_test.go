package management_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// metricsHandler stands for a Prometheus exporter's handler.
var metricsHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, "troupe_test_total 1\n")
})

// TestRoutesOnAThreeNodeCluster runs the management server on every node of a real
// three-node cluster with sharding and a singleton, and checks every route; at the end
// an operator makes node 2 leave and downs node 1 through node 0's server, and node
// 0's event stream shows both.
func TestRoutesOnAThreeNodeCluster(t *testing.T) {
	reg := testRegistry(t)
	mc := multinode.Start(t, multinode.Options{Nodes: 3, Registry: reg})
	nodes := []*node{
		startServices(t, reg, mc.Node(0), management.Config{EnableWrites: true, Token: token, Metrics: metricsHandler}),
		startServices(t, reg, mc.Node(1), management.Config{}),
		startServices(t, reg, mc.Node(2), management.Config{}),
	}
	c := client(t)
	m0 := nodes[0].mgmt
	for _, n := range nodes {
		awaitManagers(t, n.Node)
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, id := range ids {
		ask(t, nodes[i%3].region, id)
	}

	t.Run("alive and ready", func(t *testing.T) {
		for _, n := range nodes {
			var h management.HealthView
			getJSON(t, c, n.mgmt.URL()+"/alive", 200, &h)
			getJSON(t, c, n.mgmt.URL()+"/ready", 200, &h)
			if h.Status != "ready" {
				t.Fatalf("node %d: %+v", n.Index, h)
			}
		}
	})

	t.Run("members", func(t *testing.T) {
		var v management.MembersView
		getJSON(t, c, m0.URL()+"/cluster/members", 200, &v)
		if v.SelfNode != selfOf(mc.Node(0)) || len(v.Members) != 3 || len(v.Unreachable) != 0 {
			t.Fatalf("members: %+v", v)
		}
		oldest := mc.Node(0).Cluster.State().Oldest.Unique.Addr
		if v.Oldest != oldest {
			t.Fatalf("oldest %q, want %q", v.Oldest, oldest)
		}
		var ages []int
		for _, m := range v.Members {
			if m.Status != "Up" || m.NodeUID == "" || m.UpNumber == 0 {
				t.Fatalf("member %+v", m)
			}
			if m.Node == oldest && m.AgeOrder != 1 {
				t.Fatalf("the oldest has age order %d", m.AgeOrder)
			}
			ages = append(ages, m.AgeOrder)
		}
		slices.Sort(ages)
		if !slices.Equal(ages, []int{1, 2, 3}) {
			t.Fatalf("age orders %v", ages)
		}
	})

	t.Run("one member", func(t *testing.T) {
		addr := selfOf(mc.Node(1))
		for _, u := range []string{memberURL(m0, addr), m0.URL() + "/cluster/members/" + strings.TrimPrefix(addr, "troupe://")} {
			var v management.MemberView
			getJSON(t, c, u, 200, &v)
			if v.Node != addr || v.Status != "Up" || v.NodeUID != fmt.Sprint(mc.Node(1).Cluster.SelfUniqueAddress().UID) {
				t.Fatalf("GET %s: %+v", u, v)
			}
		}
		getJSON(t, c, memberURL(m0, "troupe://node9@127.0.0.1:1"), 404, nil)
		getJSON(t, c, m0.URL()+"/cluster/members/"+"no%20address", 400, nil)
		getJSON(t, c, m0.URL()+"/cluster/members/"+"node1@127.0.0.1", 400, nil)
	})

	t.Run("shards", func(t *testing.T) {
		var types management.EntityTypesView
		getJSON(t, c, m0.URL()+"/cluster/shards", 200, &types)
		if len(types.EntityTypes) != 1 || types.EntityTypes[0].Name != "Counter" || types.EntityTypes[0].Proxy {
			t.Fatalf("entity types %+v", types)
		}
		local := 0
		for _, n := range nodes {
			var v management.RegionView
			getJSON(t, c, n.mgmt.URL()+"/cluster/shards/Counter", 200, &v)
			if v.SelfNode != selfOf(n.Node) || len(v.Failed) != 0 {
				t.Fatalf("node %d: %+v", n.Index, v)
			}
			for _, s := range v.Shards {
				local += s.EntityCount
			}
		}
		if local != len(ids) {
			t.Fatalf("the regions host %d entities, want %d", local, len(ids))
		}
		var st management.ClusterShardsView
		getJSON(t, c, m0.URL()+"/cluster/shards/Counter/stats", 200, &st)
		total := 0
		for _, r := range st.Regions {
			for _, s := range r.Shards {
				total += s.EntityCount
			}
		}
		if len(st.Regions) != 3 || len(st.Failed) != 0 || total != len(ids) {
			t.Fatalf("cluster stats %+v (total %d)", st, total)
		}
		getJSON(t, c, m0.URL()+"/cluster/shards/Nope", 404, nil)
		getJSON(t, c, m0.URL()+"/cluster/shards/Nope/stats", 404, nil)
	})

	t.Run("singletons", func(t *testing.T) {
		oldest := mc.Node(0).Cluster.State().Oldest.Unique.Addr
		for _, n := range nodes {
			var v management.SingletonsView
			getJSON(t, c, n.mgmt.URL()+"/cluster/singletons", 200, &v)
			var names []string
			for _, s := range v.Singletons {
				names = append(names, s.Name)
				if s.Node != oldest || s.RunningHere != (selfOf(n.Node) == oldest) || s.Stopped {
					t.Fatalf("node %d: singleton %+v (oldest %s)", n.Index, s, oldest)
				}
			}
			if !slices.Equal(names, []string{"CounterCoordinator", "boss"}) {
				t.Fatalf("node %d: singletons %v", n.Index, names)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		status, body := do(t, c, http.MethodGet, m0.URL()+"/metrics", nil, nil)
		if status != 200 || string(body) != "troupe_test_total 1\n" {
			t.Fatalf("metrics: %d %q", status, body)
		}
		getJSON(t, c, nodes[1].mgmt.URL()+"/metrics", 404, nil)
		getJSON(t, c, m0.URL()+"/no/such/route", 404, nil)
	})

	t.Run("refused writes", func(t *testing.T) {
		target := memberURL(m0, selfOf(mc.Node(2)))
		form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		auth := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Bearer " + token}
		cases := []struct {
			name   string
			method string
			u      string
			body   string
			header map[string]string
			want   int
		}{
			{"writes disabled", http.MethodPut, memberURL(nodes[1].mgmt, selfOf(mc.Node(2))), "operation=Leave", auth, 403},
			{"delete, writes disabled", http.MethodDelete, memberURL(nodes[1].mgmt, selfOf(mc.Node(2))), "", auth, 403},
			{"no token", http.MethodPut, target, "operation=Leave", form, 401},
			{"wrong token", http.MethodPut, target, "operation=Leave",
				map[string]string{"Authorization": "Bearer not-the-token-at-all"}, 401},
			{"delete without token", http.MethodDelete, target, "", nil, 401},
			{"unknown operation", http.MethodPut, target, "operation=Explode", auth, 400},
			{"no operation", http.MethodPut, target, "", auth, 400},
			{"malformed JSON", http.MethodPut, target, `{"operation":`,
				map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}, 400},
			{"malformed address", http.MethodPut, m0.URL() + "/cluster/members/x", "operation=Down", auth, 400},
			{"unknown member", http.MethodPut, memberURL(m0, "troupe://node9@127.0.0.1:1"), "operation=Down", auth, 404},
			{"too large", http.MethodPut, target, "operation=Leave&pad=" + strings.Repeat("x", management.DefaultMaxBodyBytes), auth, 413},
		}
		for _, tc := range cases {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			if status, b := do(t, c, tc.method, tc.u, body, tc.header); status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, status, b, tc.want)
			}
		}
		// A body over the limit without a Content-Length (chunked) is refused too.
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, "operation=Leave&pad=")
			_, _ = io.WriteString(pw, strings.Repeat("x", management.DefaultMaxBodyBytes))
			_ = pw.Close()
		}()
		if status, b := do(t, c, http.MethodPut, target, pr, auth); status != 413 {
			t.Errorf("chunked, too large: %d %s, want 413", status, b)
		}
		if n := len(mc.Node(0).Cluster.State().Members); n != 3 {
			t.Fatalf("the refused requests changed the cluster: %d members", n)
		}
	})

	// Leave and down: node 0's stream sees node 2 leave and node 1 be downed.
	events := openEvents(t, c, m0.URL()+"/cluster/events?type=member-left,member-removed&type=member-downed")
	leaving := selfOf(mc.Node(2))
	status, body := do(t, c, http.MethodPut, memberURL(m0, leaving), strings.NewReader(`{"operation":"Leave"}`),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token})
	if status != 200 {
		t.Fatalf("PUT Leave: %d %s", status, body)
	}
	events.await(t, "member-left of node 2", func(e sseEvent) bool {
		return e.name == management.EventMemberLeft && e.data.Member.Node == leaving
	})
	ev := events.await(t, "member-removed of node 2", func(e sseEvent) bool {
		return e.name == management.EventMemberRemoved && e.data.Member.Node == leaving
	})
	if ev.data.PreviousStatus != cluster.Exiting.String() {
		t.Fatalf("node 2 removed from %s, want Exiting (a graceful leave)", ev.data.PreviousStatus)
	}
	awaitTerminated(t, mc.Node(2).System, "node 2 left")

	downed := selfOf(mc.Node(1))
	status, body = do(t, c, http.MethodPut, memberURL(m0, downed), strings.NewReader("operation=Down"),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Bearer " + token})
	if status != 200 {
		t.Fatalf("PUT Down: %d %s", status, body)
	}
	events.await(t, "member-downed of node 1", func(e sseEvent) bool {
		return e.name == management.EventMemberDowned && e.data.Member.Node == downed
	})
	select {
	case <-mc.Node(1).Cluster.Stopped():
	case <-time.After(testkit.Dilated(20 * time.Second)):
		t.Fatal("node 1 did not learn it was downed")
	}
	for _, ev := range drain(events) {
		if ev.name != management.EventMemberLeft && ev.name != management.EventMemberRemoved && ev.name != management.EventMemberDowned {
			t.Fatalf("the type filter let %s through", ev.name)
		}
	}
	// DELETE makes this member itself leave: its system shuts down.
	status, body = do(t, c, http.MethodDelete, memberURL(m0, selfOf(mc.Node(0))), nil,
		map[string]string{"Authorization": "Bearer " + token})
	if status != 200 {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	awaitTerminated(t, mc.Node(0).System, "node 0 left")
	if _, err := http.Get(m0.URL() + "/alive"); err == nil {
		t.Fatal("the server still answers after its system terminated")
	}
}

// drain returns the events already received by s.
func drain(s *eventStream) []sseEvent {
	var out []sseEvent
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}
