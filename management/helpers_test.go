package management_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
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

// token is the bearer token of the test servers that enable writes.
const token = "test-token-0123456789"

// entity answers any string with its entity ID.
type entity struct{}

func (entity) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(string); ok {
		_ = ctx.Respond(string(sharding.EntityIDOf(ctx)))
	}
}

func testRegistry(t *testing.T) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := serialization.Register[string](reg, "test.string"); err != nil {
		t.Fatal(err)
	}
	return reg
}

// node is one node of a test cluster with its services.
type node struct {
	*multinode.Node
	region actor.Ref
	mgmt   *management.Management
}

// startServices starts distributed data, sharding (entity type Counter), the
// singleton "boss" and the management server on n; cfg adjusts the server's config.
func startServices(t *testing.T, reg *serialization.Registry, n *multinode.Node, cfg management.Config) *node {
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
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	m, err := management.Start(n.System, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &node{Node: n, region: region, mgmt: m}
}

// client is an HTTP client whose connections are closed at the end of the test.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: testkit.Dilated(20 * time.Second)}
}

// do sends a request and returns the status and body.
func do(t *testing.T, c *http.Client, method, u string, body io.Reader, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// getJSON GETs u, expects want and decodes the body into v.
func getJSON(t *testing.T, c *http.Client, u string, want int, v any) {
	t.Helper()
	status, body := do(t, c, http.MethodGet, u, nil, nil)
	if status != want {
		t.Fatalf("GET %s = %d %s, want %d", u, status, body, want)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", u, err, body)
		}
	}
}

// memberURL is the route of the member at addr (its full address, escaped).
func memberURL(m *management.Management, addr string) string {
	return m.URL() + "/cluster/members/" + url.PathEscape(addr)
}

// sseEvent is one server-sent event read from a stream.
type sseEvent struct {
	name string
	data management.Event
}

// eventStream is an open GET /cluster/events.
type eventStream struct {
	resp   *http.Response
	events chan sseEvent
	done   chan struct{}
}

// openEvents opens an event stream at u and reads it in the background until it ends;
// it waits until the server has registered the stream (its opening comment).
func openEvents(t *testing.T, c *http.Client, u string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: c.Transport}).Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, b)
	}
	s := &eventStream{resp: resp, events: make(chan sseEvent, 1024), done: make(chan struct{})}
	opened := make(chan struct{})
	go func() {
		defer close(s.done)
		defer close(s.events)
		r := bufio.NewReader(resp.Body)
		var name string
		first := true
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case first && strings.HasPrefix(line, ":"):
				first = false
				close(opened)
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var ev management.Event
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("malformed event data %q: %v", line, err)
					continue
				}
				s.events <- sseEvent{name: name, data: ev}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-s.done
	})
	select {
	case <-opened:
	case <-s.done:
		t.Fatal("the event stream ended before it opened")
	case <-time.After(testkit.Dilated(10 * time.Second)):
		t.Fatal("the event stream did not open")
	}
	return s
}

// await reads events until one satisfies cond, and returns it.
func (s *eventStream) await(t *testing.T, what string, cond func(sseEvent) bool) sseEvent {
	t.Helper()
	timeout := time.After(testkit.Dilated(30 * time.Second))
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the event stream ended while waiting for %s", what)
			}
			if cond(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event %s", what)
		}
	}
}

// awaitTerminated waits until sys has terminated.
func awaitTerminated(t *testing.T, sys *actor.System, what string) {
	t.Helper()
	select {
	case <-sys.Terminated():
	case <-time.After(testkit.Dilated(30 * time.Second)):
		t.Fatalf("%s: the system did not terminate", what)
	}
}

// ask asks entity id through region and returns its answer.
func ask(t *testing.T, region actor.Ref, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	got, err := actor.Ask[string](ctx, region, sharding.Envelope{EntityID: sharding.EntityID(id), Message: "who"})
	if err != nil || got != id {
		t.Fatalf("entity %s answered %q, %v", id, got, err)
	}
}

// selfOf returns the address of n's member.
func selfOf(n *multinode.Node) string { return n.Cluster.SelfUniqueAddress().Addr }

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
