package sharding

import (
	"maps"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// The state queries are answered by short-lived collector actors, children of the
// region, so that the region never waits: one asks the local shards
// (GetShardRegionState, GetShardRegionStats), the other asks the coordinator for the
// regions and then every region (GetClusterShardingStats).

// queryTimeout is the collector's deadline message.
type queryTimeout struct{}

// queryShards answers a request for this region's shards.
func (r *regionActor) queryShards(ctx actor.Context, stats bool) {
	shards := maps.Clone(r.shards)
	timeout := r.cfg.Timings.ShardRegionQueryTimeout
	replyTo := ctx.Sender()
	props := actor.PropsOf(func() actor.Actor {
		return &shardsCollector{shards: shards, replyTo: replyTo, stats: stats, timeout: timeout}
	})
	if _, err := ctx.Spawn(props, ""); err != nil {
		_ = ctx.Respond(actor.Failure{Err: err})
	}
}

// shardsCollector asks every local shard for its entities and answers replyTo.
type shardsCollector struct {
	shards  map[ShardID]actor.Ref
	replyTo actor.Ref
	stats   bool
	timeout time.Duration
	got     map[ShardID][]EntityID
}

func (q *shardsCollector) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		q.got = map[ShardID][]EntityID{}
		for _, ref := range q.shards {
			_ = ctx.Send(ref, getShardEntities{})
		}
		ctx.StartSingleTimer(queryTimeout{}, queryTimeout{}, q.timeout)
		q.maybeDone(ctx, false)
	case shardEntities:
		q.got[m.shard] = m.ids
		q.maybeDone(ctx, false)
	case queryTimeout:
		q.maybeDone(ctx, true)
	}
}

func (q *shardsCollector) maybeDone(ctx actor.Context, timedOut bool) {
	if len(q.got) < len(q.shards) && !timedOut {
		return
	}
	var failed []ShardID
	for s := range q.shards {
		if _, ok := q.got[s]; !ok {
			failed = append(failed, s)
		}
	}
	slices.Sort(failed)
	if q.stats {
		st := ShardRegionStats{Shards: map[ShardID]int{}, Failed: failed}
		for s, ids := range q.got {
			st.Shards[s] = len(ids)
		}
		_ = q.replyTo.Send(st, ctx.Self())
	} else {
		st := ShardRegionState{Failed: failed}
		for _, s := range slices.Sorted(maps.Keys(q.got)) {
			st.Shards = append(st.Shards, ShardState{Shard: s, Entities: q.got[s]})
		}
		_ = q.replyTo.Send(st, ctx.Self())
	}
	_ = ctx.Stop(ctx.Self())
}

// queryCluster answers GetClusterShardingStats.
func (r *regionActor) queryCluster(ctx actor.Context, m GetClusterShardingStats) {
	if r.coordinator.IsZero() {
		r.toCoordinator(ctx) // answers ErrNoCoordinator
		return
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = r.cfg.Timings.ShardRegionQueryTimeout
	}
	regionPath := "/system/sharding/" + r.entry.name
	coordinator, replyTo := r.coordinator, ctx.Sender()
	props := actor.PropsOf(func() actor.Actor {
		return &clusterCollector{coordinator: coordinator, replyTo: replyTo, timeout: timeout, path: regionPath}
	})
	if _, err := ctx.Spawn(props, ""); err != nil {
		_ = ctx.Respond(actor.Failure{Err: err})
	}
}

// clusterCollector asks the coordinator for the regions, then every region for its
// stats, and answers replyTo.
type clusterCollector struct {
	coordinator actor.Ref
	replyTo     actor.Ref
	timeout     time.Duration
	path        string

	asked  map[actor.Ref]string // region -> its node's address
	got    map[string]ShardRegionStats
	listed bool // the coordinator answered
}

func (q *clusterCollector) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		q.asked = map[actor.Ref]string{}
		q.got = map[string]ShardRegionStats{}
		_ = ctx.Send(q.coordinator, GetCurrentRegions{})
		ctx.StartSingleTimer(queryTimeout{}, queryTimeout{}, q.timeout)
	case CurrentRegions:
		for _, a := range m.Regions {
			ref, err := ctx.System().Resolve(a.String() + q.path)
			if err != nil {
				continue
			}
			q.asked[ref] = a.String()
			_ = ctx.Send(ref, GetShardRegionStats{})
		}
		q.listed = true
		q.maybeDone(ctx, false)
	case ShardRegionStats:
		if a, ok := q.asked[ctx.Sender()]; ok {
			q.got[a] = m
		} else if a := ctx.Sender().Address().String(); a != "" {
			q.got[a] = m
		}
		q.maybeDone(ctx, false)
	case queryTimeout:
		q.maybeDone(ctx, true)
	}
}

func (q *clusterCollector) maybeDone(ctx actor.Context, timedOut bool) {
	if (!q.listed || len(q.got) < len(q.asked)) && !timedOut {
		return
	}
	out := ClusterShardingStats{Regions: q.got}
	for _, a := range q.asked {
		if _, ok := q.got[a]; !ok {
			out.Failed = append(out.Failed, a)
		}
	}
	slices.Sort(out.Failed)
	_ = q.replyTo.Send(out, ctx.Self())
	_ = ctx.Stop(ctx.Self())
}
