package sharding

import (
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/supervision"
	"go.uber.org/zap"
)

// The coordinator host, /system/sharding/<type>Coordinator on every node with the type's
// role, decides where the coordinator runs: on the oldest member with the role, as
// Akka's cluster singleton does. Regions send their registration (and nothing else) to
// the host on the oldest node, which forwards it to its coordinator; the coordinator
// answers from its own Ref, which the regions then watch and talk to.
//
// This host is the seam where the cluster singleton goes: until the singleton package
// can be used, the host starts the coordinator itself when its node becomes the oldest
// and stops it when another node does, or when its own node starts to leave. Unlike the
// singleton it does not wait for the previous oldest to hand over: after a crash the
// next oldest takes over once the crashed node is downed; a partition is settled by the
// split-brain resolver first. Should two coordinators ever overlap, the journal's
// sequence numbers (StateStorePersistence) let only one of them write: the other stops.
//
// The coordinator runs under a backoff supervisor named "singleton" (restart on stop,
// after CoordinatorFailureBackoff, growing to five times as much, with 20% jitter), as
// /system/sharding/<type>Coordinator/singleton/coordinator.
type coordinatorHost struct {
	ext   *Sharding
	entry *typeEntry
	log   *zap.Logger

	view     *memberView
	selfAddr string
	child    actor.Ref // the backoff supervisor, while this node hosts the coordinator
	// downedAt is when the last downed member was removed: a coordinator taking over
	// waits the removal margin after it, so that a downed coordinator on the other side
	// of a partition has stopped first (the singleton's rule).
	downedAt time.Time
}

// marginPassed re-evaluates once the removal margin has passed.
type marginPassed struct{}

// coordinatorStop stops the coordinator for good (and its backoff supervisor) once it
// has handled the messages queued before it.
type coordinatorStop struct{}

func coordinatorHostProps(ext *Sharding, e *typeEntry) *actor.Props {
	return actor.PropsOf(func() actor.Actor { return &coordinatorHost{ext: ext, entry: e} })
}

func (h *coordinatorHost) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		h.log = ctx.Logger().With(zap.String("type", h.entry.name))
		if c := clusterFor(ctx.System()); c != nil {
			h.view = newMemberView()
			h.view.apply(c.State())
			h.selfAddr = c.SelfUniqueAddress().Addr
			c.Subscribe(ctx.Self())
		} else {
			h.view = soloView(ctx.System())
			h.selfAddr = ctx.System().Address().String()
		}
		h.evaluate(ctx)
	case actor.Stopping, actor.Restarting:
	case actor.Stopped:
		unsubscribe(ctx.System(), ctx.Self())
	case actor.Terminated:
		if m.Ref == h.child {
			h.child = actor.Ref{}
			h.log.Warn("sharding: the coordinator's supervisor stopped")
		}
	case marginPassed:
		h.evaluate(ctx)
	default:
		if rm, ok := m.(cluster.MemberRemoved); ok && rm.PreviousStatus == cluster.Down {
			h.downedAt = time.Now()
		}
		if h.view.apply(m) {
			h.evaluate(ctx)
			return
		}
		if !h.child.IsZero() {
			_ = ctx.Forward(h.child)
		}
		// Without a coordinator here the region retries elsewhere.
	}
}

// evaluate starts or stops the coordinator as this node becomes or stops being the
// oldest member with the role.
func (h *coordinatorHost) evaluate(ctx actor.Context) {
	// A node that leaves stops its coordinator at once (its regions have handed their
	// shards off already, in an earlier shutdown phase); the next oldest starts one when
	// it sees this node Exiting. The gap delays new allocations a moment; it never lets
	// two coordinators run.
	self := h.view.members[h.selfAddr]
	oldest := h.view.oldest(h.entry.cfg.Role) == h.selfAddr && self.Status == cluster.Up
	if oldest && h.child.IsZero() {
		if wait := removalMargin(ctx.System()) - time.Since(h.downedAt); !h.downedAt.IsZero() && wait > 0 {
			ctx.StartSingleTimer(marginPassed{}, marginPassed{}, wait)
			return
		}
	}
	switch {
	case oldest && h.child.IsZero():
		t := h.entry.cfg.Timings
		props, err := actor.BackoffSupervisorProps(actor.BackoffOptions{
			Child:     coordinatorProps(h.ext, h.entry),
			ChildName: "coordinator",
			Mode:      actor.BackoffOnStop,
			Backoff: supervision.Backoff{
				Min:          t.CoordinatorFailureBackoff,
				Max:          5 * t.CoordinatorFailureBackoff,
				RandomFactor: 0.2,
				ResetAfter:   time.Minute,
			},
			FinalStopMessage: func(msg any) bool { _, ok := msg.(coordinatorStop); return ok },
		})
		if err != nil {
			h.log.Error("sharding: cannot start the coordinator", zap.Error(err))
			return
		}
		ref, err := ctx.Spawn(props, "singleton")
		if err != nil {
			h.log.Error("sharding: cannot start the coordinator", zap.Error(err))
			return
		}
		ctx.Watch(ref)
		h.child = ref
		h.log.Info("sharding: coordinator started on this node")
	case !oldest && !h.child.IsZero():
		// The stop message queues behind what the coordinator has still to handle (the
		// last ShardStopped and RegionStopped of this node's regions, which handed their
		// shards off in an earlier shutdown phase), so that its stored state is complete
		// when the next coordinator reads it.
		ctx.Unwatch(h.child)
		_ = h.child.Tell(coordinatorStop{})
		h.child = actor.Ref{}
		h.log.Info("sharding: coordinator stopped on this node (another node is the oldest)")
	}
}
