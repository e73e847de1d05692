package management

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/singleton"
)

// HealthView answers GET /alive and GET /ready.
type HealthView struct {
	// Status is "alive", "ready" or "not ready".
	Status string `json:"status"`
	// Reasons says why the node is not ready (GET /ready with 503).
	Reasons []string `json:"reasons,omitempty"`
}

// handleAlive answers GET /alive: 200 while the actor system runs.
func (m *Management) handleAlive(w http.ResponseWriter, _ *http.Request) {
	select {
	case <-m.sys.Terminated():
		writeJSON(w, http.StatusServiceUnavailable, HealthView{Status: "terminated"})
	default:
		writeJSON(w, http.StatusOK, HealthView{Status: "alive"})
	}
}

// handleReady answers GET /ready: 200 when this member is Up and the regions, proxies
// and singleton managers started here have started; 503 with the reasons otherwise.
func (m *Management) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), m.cfg.QueryTimeout)
	defer cancel()
	reasons := m.ready.check(ctx, m.sys)
	if len(reasons) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, HealthView{Status: "not ready", Reasons: reasons})
		return
	}
	writeJSON(w, http.StatusOK, HealthView{Status: "ready"})
}

// readiness remembers the entity types whose region (or proxy) has reached its
// coordinator once: as Akka's sharding health check, a region that was ready stays
// ready while its coordinator moves, so that the probe does not take every node out
// of a load balancer at once.
type readiness struct {
	mu      sync.Mutex
	reached map[string]bool
}

// check returns why sys is not ready, or nothing when it is.
func (rd *readiness) check(ctx context.Context, sys *actor.System) []string {
	var reasons []string
	select {
	case <-sys.Terminated():
		return []string{"the actor system has terminated"}
	default:
	}
	if c := cluster.Get(sys); c != nil {
		reasons = append(reasons, memberReasons(c)...)
	}
	if s := sharding.Get(sys); s != nil {
		reasons = append(reasons, rd.shardingReasons(ctx, s)...)
	}
	for _, mgr := range singleton.Managers(sys) {
		if r := managerReason(mgr.Status()); r != "" {
			reasons = append(reasons, r)
		}
	}
	return reasons
}

// memberReasons returns why this member does not serve: it is not Up, or its
// cluster services have stopped.
func memberReasons(c *cluster.Cluster) []string {
	select {
	case <-c.Stopped():
		return []string{"this node's cluster services have stopped (it left, was downed or shut down)"}
	default:
	}
	self := c.SelfUniqueAddress()
	for _, mem := range c.State().Members {
		if mem.Unique == self {
			if mem.Status != cluster.Up {
				return []string{"this member is " + mem.Status.String() + ", not Up"}
			}
			return nil
		}
	}
	return []string{"this node is not a member yet"}
}

// managerReason returns why a singleton manager does not serve yet, or "".
func managerReason(st singleton.Status) string {
	switch {
	case st.Stopped:
		return fmt.Sprintf("the manager of singleton %q has stopped", st.Name)
	case st.State == singleton.StateStart:
		return fmt.Sprintf("the manager of singleton %q has not started (this member is not Up)", st.Name)
	}
	return ""
}

// shardingReasons asks each entity type's region that has not reached its coordinator
// yet whether it has now.
func (rd *readiness) shardingReasons(ctx context.Context, s *sharding.Sharding) []string {
	var reasons []string
	for _, name := range s.TypeNames() {
		rd.mu.Lock()
		done := rd.reached[name]
		rd.mu.Unlock()
		if done {
			continue
		}
		region, err := s.Region(name)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("the region of entity type %q is starting", name))
			continue
		}
		if why := regionReason(ctx, region, name); why != "" {
			reasons = append(reasons, why)
			continue
		}
		rd.mu.Lock()
		if rd.reached == nil {
			rd.reached = map[string]bool{}
		}
		rd.reached[name] = true
		rd.mu.Unlock()
	}
	return reasons
}

// regionReason asks a region for the regions its coordinator knows: it has reached
// the coordinator when it gets them, and a region (not a proxy) is registered when its
// own node is among them.
func regionReason(ctx context.Context, region actor.Ref, name string) string {
	cr, err := actor.Ask[sharding.CurrentRegions](ctx, region, sharding.GetCurrentRegions{})
	if err != nil {
		return fmt.Sprintf("the region of entity type %q has not reached its coordinator: %v", name, err)
	}
	if isProxy(region, name) {
		return ""
	}
	if !slices.Contains(cr.Regions, region.Address()) {
		return fmt.Sprintf("the region of entity type %q is not registered with its coordinator yet", name)
	}
	return ""
}

// isProxy reports whether region is a proxy-only region: those are named <type>Proxy
// (see sharding.Sharding).
func isProxy(region actor.Ref, name string) bool {
	return region.Name() == name+"Proxy" || strings.HasSuffix(region.Path(), "/"+name+"Proxy")
}
