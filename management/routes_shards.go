package management

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/sharding"
)

// regionOrError returns the region of the route's {type}, or answers 404 (no sharding,
// or the type is not started here).
func (m *Management) regionOrError(w http.ResponseWriter, r *http.Request) (string, actor.Ref, bool) {
	name := r.PathValue("type")
	s := sharding.Get(m.sys)
	if s == nil {
		writeError(w, http.StatusNotFound, "sharding is not started on this node")
		return "", actor.Ref{}, false
	}
	region, err := s.Region(name)
	if err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("entity type %q is not started on this node", name))
		return "", actor.Ref{}, false
	}
	return name, region, true
}

// handleEntityTypes answers GET /cluster/shards.
func (m *Management) handleEntityTypes(w http.ResponseWriter, _ *http.Request) {
	v := EntityTypesView{SelfNode: m.selfNode(), EntityTypes: []EntityTypeView{}}
	if s := sharding.Get(m.sys); s != nil {
		for _, name := range s.TypeNames() {
			region, err := s.Region(name)
			v.EntityTypes = append(v.EntityTypes, EntityTypeView{Name: name, Proxy: err == nil && isProxy(region, name)})
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// handleRegion answers GET /cluster/shards/{type}: this node's shards of the type.
func (m *Management) handleRegion(w http.ResponseWriter, r *http.Request) {
	name, region, ok := m.regionOrError(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.cfg.QueryTimeout)
	defer cancel()
	st, err := actor.Ask[sharding.ShardRegionState](ctx, region, sharding.GetShardRegionState{})
	if err != nil {
		writeQueryError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, regionView(m.selfNode(), name, st))
}

// handleClusterShards answers GET /cluster/shards/{type}/stats: the type's shards on
// every node.
func (m *Management) handleClusterShards(w http.ResponseWriter, r *http.Request) {
	name, region, ok := m.regionOrError(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.cfg.QueryTimeout)
	defer cancel()
	// The regions get most of the time, so that the answer (with the ones that did
	// not answer listed) arrives before the ask gives up.
	st, err := actor.Ask[sharding.ClusterShardingStats](ctx, region, sharding.GetClusterShardingStats{Timeout: m.cfg.QueryTimeout * 4 / 5})
	if err != nil {
		writeQueryError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, clusterShardsView(name, st))
}

// writeQueryError answers a failed question to sharding: 503 while the coordinator is
// not known or the answer did not come in time, 500 otherwise.
func writeQueryError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, sharding.ErrNoCoordinator), errors.Is(err, context.DeadlineExceeded), errors.Is(err, actor.ErrTimeout):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}
