package sharding

import (
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/supervision"
)

// A type's coordinator is a cluster singleton named <type>Coordinator: a manager on
// every member with the type's role (/system/singleton/<type>Coordinator) runs it on the
// oldest of them, hands it over when that member leaves, and starts it on the next
// oldest after a crash once the crashed member is removed and the cluster's removal
// margin has passed (singleton's guarantees; a split brain is the resolver's to settle).
// Regions register with the singleton's path on the oldest member and then talk to the
// coordinator's own Ref, which they watch.
//
// The singleton is a backoff supervisor (restart on stop, after
// CoordinatorFailureBackoff growing to five times as much, with 20% jitter) whose child
// is the coordinator: a coordinator that stops (a store it cannot write, say) comes back
// with its state read again. The singleton's termination message, coordinatorStop,
// reaches the coordinator behind what it still has to handle and ends the supervisor
// too.
//
// A leaving member hands its shards off first (the regions, in the sharding shutdown
// phase, while the coordinator still runs here), and moves the coordinator after: the
// singleton is started with singleton.Config.CallerHandsOver, and the sharding
// shutdown task runs its hand-over itself (Manager.HandOver), in the order Akka's
// shutdown has.
//
// Without a cluster the coordinator never moves: the same supervisor runs as
// /system/sharding/<type>Coordinator.

// coordinatorStop stops the coordinator for good (and its backoff supervisor) once it
// has handled the messages queued before it.
type coordinatorStop struct{}

// coordinatorName is the name of a type's coordinator singleton.
func coordinatorName(typeName string) string { return typeName + "Coordinator" }

// coordinatorPath is the path, on the member that runs it, where regions register
// with a type's coordinator (through its supervisor).
func coordinatorPath(typeName string, solo bool) string {
	name := coordinatorName(typeName)
	if solo {
		return "/system/sharding/" + name
	}
	return "/system/singleton/" + name + "/" + name
}

// coordinatorSupervisorProps is the coordinator under its backoff supervisor.
func coordinatorSupervisorProps(ext *Sharding, e *typeEntry) (*actor.Props, error) {
	t := e.cfg.Timings
	return actor.BackoffSupervisorProps(actor.BackoffOptions{
		Child:     coordinatorProps(ext, e),
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
}

// startCoordinatorSingleton starts the manager of a type's coordinator singleton on
// this member and returns it; the sharding shutdown task hands it over (see
// handOverCoordinators).
func (s *Sharding) startCoordinatorSingleton(e *typeEntry) (*singleton.Manager, error) {
	props, err := coordinatorSupervisorProps(s, e)
	if err != nil {
		return nil, err
	}
	return singleton.Start(s.sys, singleton.Config{
		Name:               coordinatorName(e.name),
		Props:              props,
		Role:               e.cfg.Role,
		TerminationMessage: coordinatorStop{},
		CallerHandsOver:    true,
	})
}
