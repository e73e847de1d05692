package singleton

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/supervision"
)

// The per-system state of the singleton package: the managers by name, the
// guardians they and the proxies run under, and the count of dropped messages.

const (
	// managerGuardian is the parent of every manager: /system/singleton.
	managerGuardian = "singleton"
	// proxyGuardian is the parent of every proxy: /system/singleton-proxy.
	proxyGuardian = "singleton-proxy"
)

// managerPath returns the path of the manager of the singleton name on any member.
func managerPath(name string) string { return "/system/" + managerGuardian + "/" + name }

type extension struct {
	sys *actor.System

	mu        sync.Mutex
	managers  map[string]*Manager
	guardians map[string]actor.Ref
	proxies   int // proxies started, for their names

	dropped atomic.Uint64

	buffered map[string]*atomic.Int64 // messages the proxies hold, by singleton name (metrics); guarded by mu
	metrics  *singletonMetrics        // nil while metrics are off
}

var ext = actor.NewExtensionID("troupe.singleton", func(sys *actor.System) *extension {
	e := &extension{sys: sys, managers: make(map[string]*Manager), guardians: make(map[string]actor.Ref),
		buffered: make(map[string]*atomic.Int64)}
	e.startMetrics()
	return e
})

func extensionOf(sys *actor.System) *extension { return ext.Get(sys) }

func (e *extension) countDrop() { e.dropped.Add(1) }

// Dropped returns how many messages for singletons the managers and proxies of sys
// have dropped so far; each was also published as an Undelivered dead letter.
func Dropped(sys *actor.System) uint64 { return extensionOf(sys).dropped.Load() }

// spawnRequest asks a guardian to spawn a child.
type spawnRequest struct {
	props *actor.Props
	name  string
}

// spawnReply answers spawnRequest.
type spawnReply struct {
	ref actor.Ref
	err error
}

// guardian is the parent of the managers or of the proxies. A child that fails is
// stopped, never restarted: a manager restarted with a fresh state could not know
// what its predecessor promised other managers. (Neither ever fails by design; the
// failure is logged at error level by the runtime.)
func guardianProps() *actor.Props {
	return &actor.Props{
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				if r, ok := ctx.Message().(spawnRequest); ok {
					ref, err := ctx.Spawn(r.props, r.name)
					_ = ctx.Respond(spawnReply{ref: ref, err: err})
				}
			})
		},
		Strategy: supervision.OneForOne{Decider: func(error) supervision.Directive { return supervision.Stop }},
	}
}

// spawn starts props under the guardian called guardian, as name.
func (e *extension) spawn(guardian string, props *actor.Props, name string) (actor.Ref, error) {
	e.mu.Lock()
	g, ok := e.guardians[guardian]
	if !ok {
		var err error
		g, err = e.sys.SpawnSystem(guardianProps(), guardian)
		if err != nil {
			e.mu.Unlock()
			return actor.Ref{}, err
		}
		e.guardians[guardian] = g
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := actor.Ask[spawnReply](ctx, g, spawnRequest{props: props, name: name})
	if err != nil {
		return actor.Ref{}, err
	}
	return r.ref, r.err
}

// nextProxyName returns a fresh name for a proxy of the singleton name.
func (e *extension) nextProxyName(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.proxies++
	return name + "-" + strconv.Itoa(e.proxies)
}

// serializationOf returns the registry of sys's transport and the resolver for refs
// inside payloads. The messages managers and proxies exchange are Troupe's own wire
// types, which every registry knows.
func serializationOf(sys *actor.System) (*serialization.Registry, serialization.RefResolver, error) {
	r := remote.Get(sys)
	if r == nil {
		return nil, nil, fmt.Errorf("%w: remoting is not started in system %q", ErrInvalidConfig, sys.Name())
	}
	reg, res := r.Serialization()
	return reg, res, nil
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
