package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/internal/ratelog"
	"go.uber.org/zap"
)

// A cluster has an identity: the founder draws it when it forms the cluster, and every
// member that joins takes it on and carries it in its tags (membership.TagCluster). A
// node is in a cluster once it carries an identity; a node that still looks for one
// carries none. Two clusters never merge: gossip from a member of another cluster is
// refused (see mergeGuard) and such a member is never observed.

// joinStep is what the join process does next.
type joinStep int

const (
	joinRetry  joinStep = iota // try the seeds again after JoinRetryInterval
	joinAdopt                  // a member of a cluster was found: join that cluster
	joinFound                  // form a new cluster
	joinGiveUp                 // stop trying and stay Joining
)

// joinPlan decides, from what the attempts to contact the seed nodes found, whether a
// node joins a cluster, forms one or keeps trying. It holds no I/O and takes time as
// an input.
//
// Only the first seed node ever forms a cluster, and only after it has asked the
// other seeds: when every other seed answered and none is in a cluster (the whole
// cluster starts), or when SeedNodeTimeout passed without any seed that is in a cluster
// answering. A restarted first seed thus joins the cluster the other seeds still run,
// as in Akka. A node that is not the first seed only ever joins.
type joinPlan struct {
	firstSeed   bool
	otherSeeds  int // the seed nodes other than this node
	started     time.Time
	seedTimeout time.Duration
	joinTimeout time.Duration
}

// joinView is what one attempt found.
type joinView struct {
	answered int    // other seed nodes that answered the attempt
	cluster  string // the identity of a cluster seen through them; "" when none
}

// next returns the step after an attempt made at now that found v.
func (p joinPlan) next(now time.Time, v joinView) joinStep {
	waited := now.Sub(p.started)
	switch {
	case v.cluster != "":
		return joinAdopt
	case p.firstSeed && (p.otherSeeds == 0 || v.answered >= p.otherSeeds || waited >= p.seedTimeout):
		return joinFound
	case !p.firstSeed && p.joinTimeout > 0 && waited >= p.joinTimeout:
		return joinGiveUp
	default:
		return joinRetry
	}
}

// seenCluster returns the identity of the cluster the members other than self belong
// to: the one most of them carry, the lowest on a tie (a node that sees two clusters
// at once joins one of them, the same one on every attempt), or "" when none of them
// is in a cluster. Members serf holds failed or gone are not counted.
func seenCluster(members []serf.Member, self string) string {
	count := make(map[string]int)
	for _, m := range members {
		if m.Name == self || m.Status != serf.StatusAlive {
			continue
		}
		if id, err := membership.ClusterOf(m.Tags); err == nil && id != "" {
			count[id]++
		}
	}
	best := ""
	for id, n := range count {
		if best == "" || n > count[best] || n == count[best] && id < best {
			best = id
		}
	}
	return best
}

// newClusterID draws the identity of a cluster this node forms.
func newClusterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// joinOutcome is what one round of a join process found and decided.
type joinOutcome struct {
	step    joinStep
	cluster string      // joinAdopt: the identity of the cluster found
	err     error       // why the round did not join: JoinProgress.LastError
	formed  string      // joinFound: the log line saying why this node formed a cluster; "" for none
	fields  []zap.Field // context for the log lines
}

// runJoin runs a join process: round every interval until a round joins a cluster,
// forms one or gives up, or the node stops. It records each round in JoinProgress,
// logs a failed round every tenth attempt, and tells the core once the node is in a
// cluster. via names the process in the log ("the seed nodes", "discovery").
func (c *Cluster) runJoin(via string, interval time.Duration, round func() joinOutcome) {
	for attempt := 1; ; attempt++ {
		o := round()
		c.mu.Lock()
		c.join.Attempts = attempt
		c.join.LastError = o.err
		c.mu.Unlock()
		switch o.step {
		case joinAdopt:
			c.log.Info("joined a cluster through "+via,
				append([]zap.Field{zap.String("cluster", o.cluster), zap.Int("attempts", attempt)}, o.fields...)...)
			c.joinedCluster(o.cluster, false)
			return
		case joinFound:
			id := newClusterID()
			if o.formed != "" {
				c.log.Info(o.formed, append([]zap.Field{zap.String("cluster", id), zap.Int("attempts", attempt)}, o.fields...)...)
			}
			c.joinedCluster(id, true)
			return
		case joinGiveUp:
			c.mu.Lock()
			c.join.GaveUp = true
			c.mu.Unlock()
			close(c.joinFailed)
			c.log.Error("could not join a cluster through "+via+"; giving up and staying Joining",
				append([]zap.Field{zap.Int("attempts", attempt), zap.Error(o.err)}, o.fields...)...)
			return
		}
		if attempt%10 == 1 && o.err != nil {
			c.log.Warn("joining through "+via+" failed; retrying",
				append([]zap.Field{zap.Int("attempt", attempt), zap.Error(o.err)}, o.fields...)...)
		}
		select {
		case <-time.After(interval):
		case <-c.done:
			return
		}
	}
}

// joinSeeds runs the join process (joinPlan) until this node has joined a cluster,
// formed one, or given up, then tells the core.
func (c *Cluster) joinSeeds() {
	defer c.wg.Done()
	self := c.GossipAddress()
	others := slices.DeleteFunc(slices.Clone(c.cfg.SeedNodes), func(s string) bool { return s == self })
	plan := joinPlan{
		firstSeed:   len(c.cfg.SeedNodes) == 0 || c.cfg.SeedNodes[0] == self,
		otherSeeds:  len(others),
		started:     time.Now(),
		seedTimeout: c.cfg.SeedNodeTimeout,
		joinTimeout: c.cfg.JoinTimeout,
	}
	name := nodeName(c.self.Unique.Addr)
	c.runJoin("the seed nodes", c.cfg.JoinRetryInterval, func() joinOutcome {
		var v joinView
		var err error
		if len(others) > 0 {
			v.answered, err = c.serf.Join(others, true)
			if err == nil && v.answered == 0 {
				err = fmt.Errorf("no seed node answered (%s)", strings.Join(others, ", "))
			}
			v.cluster = seenCluster(c.serf.Members(), name)
		}
		step := plan.next(time.Now(), v)
		if step == joinRetry && err == nil && !plan.firstSeed {
			err = fmt.Errorf("no member of a cluster found yet through the seed nodes (%s)", strings.Join(others, ", "))
		}
		o := joinOutcome{step: step, cluster: v.cluster, err: err,
			fields: []zap.Field{zap.Strings("seeds", others), zap.Int("answered", v.answered)}}
		if step == joinFound && len(others) > 0 {
			o.formed = "formed a new cluster: no other seed node is in a cluster"
			o.fields = append(o.fields, zap.Duration("waited", time.Since(plan.started)))
		}
		return o
	})
}

// joinedCluster records that this node is in cluster id, which it formed (founder) or
// joined, and tells the core.
func (c *Cluster) joinedCluster(id string, founder bool) {
	c.clusterID.Store(&id)
	c.mu.Lock()
	c.join.Joined, c.join.LastError = true, nil
	c.mu.Unlock()
	close(c.joined)
	if err := c.core.Tell(joinedNotice{founder: founder}); err != nil {
		c.log.Debug("join notice dropped: the cluster core has stopped", zap.Error(err))
	}
}

// ClusterID returns the identity of the cluster this node belongs to, drawn by the
// member that formed it; "" while the node has not joined one yet.
func (c *Cluster) ClusterID() string {
	if id := c.clusterID.Load(); id != nil {
		return *id
	}
	return ""
}

// mergeGuard keeps clusters apart at the gossip layer: serf asks it before it takes
// in the members another node knows (a join) and before it accepts a node announcing
// itself alive, and it refuses a member of another cluster that serf does not know
// yet, logging an error at most once a minute per node. A member serf already knows
// (one that joined another cluster after this node saw it) is let through, so that
// the core sees its new identity and stops counting it as a member (see
// internal/clustercore).
type mergeGuard struct {
	c       *Cluster
	guarded *logEvery
	known   *sync.Map // the names of the nodes let through
}

// NotifyMerge implements serf.MergeDelegate.
func (g mergeGuard) NotifyMerge(members []*serf.Member) error {
	ours := g.c.ClusterID()
	if ours != "" {
		for _, m := range members {
			theirs := m.Tags[membership.TagCluster]
			if theirs == "" || theirs == ours {
				continue
			}
			if _, known := g.known.Load(m.Name); known {
				continue
			}
			if g.guarded.due(m.Name, time.Now()) {
				g.c.log.Error("refused gossip about a member of another cluster: clusters never merge; restart the nodes of one cluster so that they join the other",
					zap.String("node", m.Name), zap.String("their_cluster", theirs), zap.String("our_cluster", ours))
			}
			return fmt.Errorf("cluster: %s is a member of another cluster (%s; this node is in %s): clusters never merge", m.Name, theirs, ours)
		}
	}
	for _, m := range members {
		g.known.Store(m.Name, struct{}{})
	}
	return nil
}

var _ serf.MergeDelegate = mergeGuard{}

// logEvery says when a line about a key is due: at most once per every.
type logEvery struct {
	every time.Duration
	mu    sync.Mutex
	keys  map[string]*ratelog.Limiter
}

func (l *logEvery) due(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.keys[key]
	if lim == nil {
		if l.keys == nil {
			l.keys = make(map[string]*ratelog.Limiter)
		}
		lim = ratelog.New(l.every, 1)
		l.keys[key] = lim
	}
	ok, _ := lim.Allow(now)
	return ok
}
