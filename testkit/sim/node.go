package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/singleton"
)

// The ports every node listens on: each node has its own host address.
const (
	remotePort = 2552
	gossipPort = 7946
)

// nodeState is where a node is in its life.
type nodeState int

const (
	stopped nodeState = iota // not running: never started, crashed, left or downed
	running                  // its system runs
	leaving                  // shutting down gracefully
)

// node is one node slot of the simulation: a host address, and the incarnation that
// runs on it now, if any.
type node struct {
	index       int
	ip          string
	gen         int    // incarnations started so far
	incarnation string // "n<index>#<gen>"
	state       nodeState
	deferred    bool      // a restart waits (see run.restart)
	upAt        time.Time // when the incarnation became Up; zero before
	sys         *actor.System
	cluster     *cluster.Cluster
	repl        *ddata.Replicator
	plug        *plug
	done        chan struct{} // closed when the incarnation's system has terminated
}

func hostOf(i int) string { return "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1) }

func gossipAddr(i int) string { return hostOf(i) + ":" + strconv.Itoa(gossipPort) }

// boot starts a new incarnation of n, with the configuration every incarnation has:
// production defaults but for the addresses and the in-memory network.
func (s *run) boot(n *node) error {
	for wait := time.Now().Add(time.Minute); s.net.listening(n.ip+":"+strconv.Itoa(remotePort), gossipAddr(n.index)); {
		if time.Now().After(wait) {
			return fmt.Errorf("sim: n%d's addresses are still taken a minute after its last incarnation ended", n.index)
		}
		time.Sleep(100 * time.Millisecond) // the previous incarnation is still closing
	}
	s.mu.Lock()
	n.gen++
	gen := n.gen
	s.mu.Unlock()
	inc := fmt.Sprintf("n%d#%d", n.index, gen)
	s.net.Reconnect(n.ip)
	host := s.net.Host(n.ip)
	sys, err := actor.New("sim", actor.Config{Logger: s.logger.Named(inc)})
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = sys.Shutdown(context.Background())
		<-sys.Terminated()
		return fmt.Errorf("sim: starting %s: %w", inc, err)
	}
	if _, err := remote.Start(sys, remote.Config{Registry: s.reg, ListenHost: n.ip, ListenPort: remotePort, Dial: host.Dial, Listen: host.Listen}); err != nil {
		return fail(err)
	}
	seeds := make([]string, 0, s.opts.Nodes)
	for i := range s.opts.Nodes {
		seeds = append(seeds, gossipAddr(i))
	}
	cl, err := cluster.Start(sys, cluster.Config{GossipHost: n.ip, GossipPort: gossipPort, SeedNodes: seeds, Transport: host.Transport})
	if err != nil {
		return fail(err)
	}
	repl, err := ddata.Start(context.Background(), sys, ddata.Config{Cluster: cl, Registry: s.reg})
	if err != nil {
		return fail(err)
	}
	// The database is 1 to 20 ms away, as a PostgreSQL server in the same region.
	jr := rand.New(rand.NewPCG(s.opts.Seed, uint64(n.index)<<16|uint64(gen)|1<<40))
	p := &plug{j: s.journal, latency: time.Duration(1000+jr.IntN(19000)) * time.Microsecond, incarnation: inc, chk: s.chk, rng: jr}
	if _, err := persistence.Start(sys, persistence.Config{Journal: p, Registry: s.reg}); err != nil {
		return fail(err)
	}
	chk := s.chk
	if _, err := singleton.Start(sys, singleton.Config{Name: "sim", Props: actor.PropsOf(func() actor.Actor {
		return &singletonActor{incarnation: inc, chk: chk}
	})}); err != nil {
		return fail(err)
	}
	sh, err := sharding.Start(sys, sharding.Config{Registry: s.reg})
	if err != nil {
		return fail(err)
	}
	if _, err := sh.Start(entityType, sharding.EntityConfig{
		EntityFactory: func(id sharding.EntityID) *actor.Props {
			return persistence.Props(func() persistence.Entity {
				return &logEntity{id: string(id), incarnation: inc, chk: chk}
			})
		},
		NumberOfShards:     s.opts.Shards,
		HandOffStopMessage: Stop{},
	}); err != nil {
		return fail(err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	n.incarnation, n.state, n.sys, n.cluster, n.repl, n.plug, n.done, n.upAt = inc, running, sys, cl, repl, p, done, time.Time{}
	s.mu.Unlock()
	cl.RegisterOnMemberUp(func() {
		s.mu.Lock()
		if n.sys == sys {
			n.upAt = time.Now()
		}
		s.mu.Unlock()
	})
	go func() {
		<-sys.Terminated()
		// Terminated is closed once the actors have stopped; the transports close
		// in the same phase. A second Shutdown returns when the first has ended.
		shutdown(sys, 5*time.Minute)
		s.mu.Lock()
		if n.sys == sys {
			if n.state == running {
				s.logf("%s terminated on its own (downed)", inc)
			}
			n.state = stopped
		}
		s.mu.Unlock()
		close(done)
	}()
	s.wg.Add(1)
	go s.writeSet(rand.New(rand.NewPCG(s.opts.Seed, uint64(n.index)<<16|uint64(gen))), sys, repl, inc)
	return nil
}

// setKey is the distributed-data key every node adds to.
var setKey = ddata.NewKey[*ddata.GSet[string]]("sim-set")

// writeSet adds an element to the replicated set every few seconds while the
// incarnation runs, with WriteMajority, and tells the run what it added.
func (s *run) writeSet(rng *rand.Rand, sys *actor.System, repl *ddata.Replicator, inc string) {
	defer s.wg.Done()
	for k := 0; ; k++ {
		select {
		case <-sys.Terminated():
			return
		case <-s.stop:
			return
		case <-time.After(time.Duration(2000+rng.IntN(4000)) * time.Millisecond):
		}
		e := inc + "/" + strconv.Itoa(k)
		s.mu.Lock()
		s.attempted[e] = true
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := ddata.Update(ctx, repl, setKey, ddata.WriteMajority(5*time.Second, 0), nil, func(g *ddata.GSet[string]) (*ddata.GSet[string], error) {
			g.Add(e)
			return g, nil
		})
		cancel()
		if err == nil || errors.Is(err, ddata.ErrTimeout) || errors.Is(err, ddata.ErrNotEnoughReplicas) {
			s.mu.Lock()
			s.added[e] = inc // in this replica at least
			s.mu.Unlock()
		}
	}
}

// crash kills n's incarnation as a dead process: cut from the network and the
// journal at once; behind the cut its system shuts down to free its goroutines.
func (s *run) crash(n *node) {
	s.mu.Lock()
	if n.state == stopped {
		s.mu.Unlock()
		return
	}
	n.state = stopped
	sys, p, inc := n.sys, n.plug, n.incarnation
	s.mu.Unlock()
	s.net.Isolate(n.ip)
	p.pulled.Store(true)
	s.chk.Crashed(inc)
	go shutdown(sys, time.Minute)
}

// leave shuts n's incarnation down gracefully.
func (s *run) leave(n *node) {
	s.mu.Lock()
	if n.state != running {
		s.mu.Unlock()
		return
	}
	n.state = leaving
	sys := n.sys
	s.mu.Unlock()
	go shutdown(sys, 5*time.Minute)
}

func shutdown(sys *actor.System, within time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	_ = sys.Shutdown(ctx)
	<-sys.Terminated()
}

// converged reports whether every running node sees exactly the running nodes, all
// Up and reachable.
func (s *run) converged() bool {
	live := s.liveNodes()
	if len(live) == 0 {
		return false
	}
	want := make(map[member.UniqueAddress]bool, len(live))
	for _, n := range live {
		want[n.cluster.SelfUniqueAddress()] = true
	}
	for _, n := range live {
		st := n.cluster.State()
		if len(st.Members) != len(live) || len(st.Unreachable) > 0 {
			return false
		}
		for _, m := range st.Members {
			if m.Status != member.Up || !want[m.Unique] {
				return false
			}
		}
	}
	return true
}
