package routing

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/member"
)

// ClusterGroupConfig configures NewClusterGroup.
type ClusterGroupConfig struct {
	// Name is the router actor's name; empty picks an anonymous one.
	Name string
	// Path is the routees' path on each member, such as "/user/workers". Required.
	Path string
	// Role, when set, limits the routees to the members with this role.
	Role string
	// ExcludeSelf leaves out the routee on this node (by default it is routed to as
	// any other).
	ExcludeSelf bool
	// Logic routes the messages; nil means RoundRobin(). With consistent hashing,
	// routers on different nodes send a key to the same member, since the ring is
	// built from the routees' addresses and paths.
	Logic Logic
}

// Validate reports a missing or relative Path, wrapping ErrInvalidConfig.
func (c ClusterGroupConfig) Validate() error {
	if c.Path == "" || c.Path[0] != '/' {
		return fmt.Errorf("%w: cluster group Path %q, want an absolute actor path such as /user/workers", ErrInvalidConfig, c.Path)
	}
	return nil
}

// NewClusterGroup starts a group router whose routees are the actors at cfg.Path on
// every cluster member that is Up, reachable and has cfg.Role. It follows the
// cluster's membership (package cluster, which must have been started on the
// system): a member that becomes Up gets a routee, and one that leaves, is downed,
// is removed or becomes unreachable loses it (and gets it back when reachable
// again). A routee that stops is dropped as in any group, until the membership next
// changes. The actors at the path are the application's to start on each member;
// messages routed to a member where none runs become dead letters there, and the
// router's watch of it reports it stopped, so it is dropped.
//
// There is no cluster-aware pool: spawning routees on other members would need
// remote deployment, which Troupe does not have. Start the routees on each member and
// route to them with a cluster-aware group.
func NewClusterGroup(ctx context.Context, parent Spawner, cfg ClusterGroupConfig) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logic == nil {
		cfg.Logic = RoundRobin()
	}
	r := &Router{ready: make(chan struct{})}
	props := actor.PropsOf(func() actor.Actor {
		return &routerActor{h: r, logic: cfg.Logic, feed: actor.PropsOf(func() actor.Actor {
			return &clusterFeed{cfg: cfg, refs: map[member.UniqueAddress]actor.Ref{}}
		})}
	})
	return r.start(ctx, parent, props, cfg.Name)
}

// clusterFeed is a child of a cluster-aware group's router: it subscribes to the
// cluster's events and sends its parent UpdateRoutees whenever the members that hold
// a routee change.
type clusterFeed struct {
	cfg  ClusterGroupConfig
	c    *cluster.Cluster
	view *clusterView
	refs map[member.UniqueAddress]actor.Ref // resolved once per member
	last []member.UniqueAddress
}

func (f *clusterFeed) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		f.c = cluster.Get(ctx.System())
		if f.c == nil {
			ctx.Logger().Error("routing: cluster-aware group on a system without a cluster; it has no routees")
			return
		}
		f.view = newClusterView(f.cfg.Role, f.c.SelfUniqueAddress(), !f.cfg.ExcludeSelf)
		if err := f.c.Subscribe(ctx.Self()); err != nil {
			ctx.Logger().Error("routing: cluster-aware group cannot follow the membership", zap.Error(err))
		}
	case actor.Stopped:
		if f.c != nil {
			_ = f.c.Unsubscribe(ctx.Self())
		}
	default:
		if f.view == nil || !f.view.apply(m) {
			return
		}
		f.push(ctx)
	}
}

// push sends the parent the routees of the available members, if they changed.
func (f *clusterFeed) push(ctx actor.Context) {
	avail := f.view.available()
	if slices.Equal(avail, f.last) {
		return
	}
	f.last = avail
	refs := make([]actor.Ref, 0, len(avail))
	for _, u := range avail {
		ref, ok := f.refs[u]
		if !ok {
			var err error
			ref, err = ctx.System().Resolve(u.Addr + f.cfg.Path)
			if err != nil {
				ctx.Logger().Warn("routing: no routee on a member", zap.String("member", u.String()),
					zap.String("routee_path", f.cfg.Path), zap.Error(err))
				continue
			}
			f.refs[u] = ref
		}
		refs = append(refs, ref)
	}
	for u := range f.refs {
		if !slices.Contains(avail, u) {
			delete(f.refs, u)
		}
	}
	_ = ctx.Parent().Tell(UpdateRoutees{Refs: refs})
}
