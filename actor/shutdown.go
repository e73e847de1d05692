package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Phase names one step of coordinated shutdown. Phases run in the order of Phases();
// layers register their tasks in the phase that fits (sharding hands off shards in
// PhaseClusterShardingShutdownRegion, the cluster leaves in PhaseClusterLeave, ...).
type Phase string

// The coordinated-shutdown phases, in order.
const (
	PhaseBeforeServiceUnbind           Phase = "before-service-unbind"
	PhaseServiceUnbind                 Phase = "service-unbind"
	PhaseServiceRequestsDone           Phase = "service-requests-done"
	PhaseServiceStop                   Phase = "service-stop"
	PhaseBeforeClusterShutdown         Phase = "before-cluster-shutdown"
	PhaseClusterShardingShutdownRegion Phase = "cluster-sharding-shutdown-region"
	PhaseClusterLeave                  Phase = "cluster-leave"
	PhaseClusterExiting                Phase = "cluster-exiting"
	PhaseClusterExitingDone            Phase = "cluster-exiting-done"
	PhaseClusterShutdown               Phase = "cluster-shutdown"
	PhaseBeforeActorSystemTerminate    Phase = "before-actor-system-terminate"
	PhaseActorSystemTerminate          Phase = "actor-system-terminate"
)

var phaseOrder = []Phase{
	PhaseBeforeServiceUnbind, PhaseServiceUnbind, PhaseServiceRequestsDone, PhaseServiceStop,
	PhaseBeforeClusterShutdown, PhaseClusterShardingShutdownRegion, PhaseClusterLeave,
	PhaseClusterExiting, PhaseClusterExitingDone, PhaseClusterShutdown,
	PhaseBeforeActorSystemTerminate, PhaseActorSystemTerminate,
}

// Phases returns the shutdown phases in the order they run.
func Phases() []Phase { return append([]Phase(nil), phaseOrder...) }

func knownPhase(p Phase) bool {
	for _, q := range phaseOrder {
		if q == p {
			return true
		}
	}
	return false
}

// ShutdownTask is one step of a phase. It should finish before ctx is done; a task
// that overruns is abandoned and reported, and the next phase starts.
type ShutdownTask func(ctx context.Context) error

type namedTask struct {
	name string
	fn   ShutdownTask
}

// CoordinatedShutdown runs registered tasks phase by phase when the system shuts down.
// Tasks of one phase run concurrently; the phase ends when all have returned or its
// timeout has passed. After the last phase every actor is stopped.
type CoordinatedShutdown struct {
	sys *System

	mu      sync.Mutex
	tasks   map[Phase][]namedTask
	started bool
	done    chan struct{}
	err     error
}

func newCoordinatedShutdown(s *System) *CoordinatedShutdown {
	return &CoordinatedShutdown{sys: s, tasks: make(map[Phase][]namedTask), done: make(chan struct{})}
}

// AddTask registers fn to run in phase. It fails for an unknown phase or once shutdown
// has begun.
func (cs *CoordinatedShutdown) AddTask(phase Phase, name string, fn ShutdownTask) error {
	if !knownPhase(phase) {
		return fmt.Errorf("%w: %q", ErrUnknownPhase, phase)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.started {
		return ErrShutdownStarted
	}
	cs.tasks[phase] = append(cs.tasks[phase], namedTask{name: name, fn: fn})
	return nil
}

// Bound returns the longest a shutdown can take with the tasks registered now: the sum
// of the timeouts of the phases that have tasks (the last phase always has one: it
// stops every actor). Give a process manager at least this long between its stop
// signal and its kill (Kubernetes' terminationGracePeriodSeconds, systemd's
// TimeoutStopSec); a shutdown normally takes far less.
func (cs *CoordinatedShutdown) Bound() time.Duration {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var d time.Duration
	for _, p := range phaseOrder {
		if len(cs.tasks[p]) > 0 || p == PhaseActorSystemTerminate {
			d += cs.timeout(p)
		}
	}
	return d
}

func (cs *CoordinatedShutdown) timeout(p Phase) time.Duration {
	if d, ok := cs.sys.cfg.PhaseTimeouts[p]; ok {
		return d
	}
	return cs.sys.cfg.PhaseTimeout
}

func (cs *CoordinatedShutdown) run(ctx context.Context) error {
	cs.mu.Lock()
	if cs.started {
		cs.mu.Unlock()
		select {
		case <-cs.done:
			return cs.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cs.started = true
	cs.mu.Unlock()

	log := cs.sys.log
	var errs []error
	for _, p := range phaseOrder {
		tasks := cs.tasks[p]
		if p == PhaseActorSystemTerminate {
			tasks = append(tasks, namedTask{name: "stop-actors", fn: cs.sys.stopActors})
		}
		if len(tasks) == 0 {
			continue
		}
		if err := cs.runPhase(ctx, p, tasks); err != nil {
			log.Warn("coordinated shutdown phase failed", zap.String("phase", string(p)), zap.Error(err))
			errs = append(errs, err)
		}
	}
	cs.err = errors.Join(errs...)
	close(cs.done)
	return cs.err
}

func (cs *CoordinatedShutdown) runPhase(parent context.Context, p Phase, tasks []namedTask) error {
	ctx, cancel := context.WithTimeout(parent, cs.timeout(p))
	defer cancel()
	results := make(chan error, len(tasks))
	for _, t := range tasks {
		go func() {
			err := safeTask(ctx, t.fn)
			if err != nil {
				err = fmt.Errorf("task %q: %w", t.name, err)
			}
			results <- err
		}()
	}
	var errs []error
	for range tasks {
		select {
		case err := <-results:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("%w: %s after %v", ErrPhaseTimeout, p, cs.timeout(p)))
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

func safeTask(ctx context.Context, fn ShutdownTask) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicReason(r)
		}
	}()
	return fn(ctx)
}
