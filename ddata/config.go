package ddata

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
)

// ErrInvalidConfig reports a Config that Validate refuses; Start returns it wrapped.
var ErrInvalidConfig = errors.New("ddata: invalid configuration")

// ErrAlreadyStarted is returned by a second Start for the same actor system.
var ErrAlreadyStarted = errors.New("ddata: replicator already started")

// Defaults of Config (Akka's, except the pruning marker's lifetime: see
// Config.PruningMarkerTimeToLive).
const (
	DefaultGossipInterval          = 2 * time.Second
	DefaultNotifyInterval          = defaultNotifyInterval
	DefaultMaxDeltaElements        = defaultMaxDeltaElements
	DefaultPruningInterval         = 120 * time.Second
	DefaultMaxPruningDissemination = defaultMaxPruningDissemination
	DefaultPruningMarkerTimeToLive = 6 * time.Hour
	DefaultMaxDeltaSize            = defaultMaxDeltaSize
	DefaultMaxMessageSize          = 128 << 10
)

// Config configures a node's replicator. The zero value is valid for a replicator
// that runs alone (no Cluster); every zero field means the default named in its
// comment.
type Config struct {
	// Cluster is the node's cluster membership: the replicator replicates among the
	// Up members (with Role, when set), and talks to their replicators through the
	// system's remote transport. nil runs the replicator alone: every consistency
	// level acts as local (ReadFrom and WriteTo still need their n replicas) and
	// nothing leaves the process. That is meant for tests and single-process use.
	Cluster *cluster.Cluster

	// Registry is the serialization registry of the system's remote transport
	// (remote.Config.Registry): the replicators' messages cross the wire through
	// it, and values are encoded with it for gossip, digests and the durable
	// store. Start registers the package's types (RegisterTypes) and the
	// replicator's messages in it, skipping what is registered already; user
	// CRDTs and other instantiations of the generic types must be registered by
	// the application (see RegisterTypes). Required with a Cluster; nil without
	// one gives the replicator a registry of its own, with RegisterTypes.
	Registry *serialization.Registry

	// Role, when set, limits replication to members with this role; this node
	// must have it. Default: every member.
	Role string

	// GossipInterval is how often the replicator sends the digests of its keys to
	// one random peer (anti-entropy). Default 2s. Deltas are propagated every
	// max(GossipInterval/5, 200ms).
	GossipInterval time.Duration
	// NotifySubscribersInterval is how often subscribers hear of changes: at most
	// once per interval per key. Default 500ms.
	NotifySubscribersInterval time.Duration
	// MaxDeltaElements bounds the keys in one gossip exchange: with more keys the
	// digests go out in chunks, one per gossip round. Default 500.
	MaxDeltaElements int
	// DisableDeltas turns delta propagation off: changes then spread by gossip
	// and by the writes of non-local consistency levels only (Akka's delta-crdt
	// off). Default: on.
	DisableDeltas bool
	// MaxDeltaSize bounds a composed delta (in operations or entries); a key whose
	// pending deltas are larger travels as full state. Default 50.
	MaxDeltaSize int

	// PruningInterval is how often the replicator prunes the data of removed
	// nodes. Default 120s.
	PruningInterval time.Duration
	// MaxPruningDissemination is how long a removed node's data is left to spread
	// before its pruning starts. Default 300s.
	MaxPruningDissemination time.Duration
	// PruningMarkerTimeToLive is how long the mark of a performed pruning is kept
	// with a value, so that a replica that still holds the removed node's state
	// drops it instead of adding it back. A replica away for longer (a node down,
	// or partitioned, for that long) may bring the removed node's state back and
	// count it twice. Default 6h (Akka's; Akka keeps 10 days for durable data:
	// raise it when nodes with durable keys may be down longer).
	PruningMarkerTimeToLive time.Duration

	// DurableKeys names the keys stored on disk: exact ids ("cart-42") and
	// prefixes ending in '*' ("cart-*"; "*" alone is every key). Default none.
	DurableKeys []string
	// DurableDir is the directory of the durable store (badger). Required with
	// DurableKeys; one replicator per directory.
	DurableDir string

	// MaxMessageSize bounds the encoded values the replicator puts in one message
	// to another node; more go in several messages. Keep it below the remote
	// transport's MaxFrameSize (256 KiB by default). A single value larger than
	// the frame size cannot be replicated (it is logged and counted). Default
	// 128 KiB.
	MaxMessageSize int
}

// Validate reports the first problem with c, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Cluster != nil && c.Registry == nil:
		return bad("Registry is required with a Cluster: give the registry of remote.Config")
	case c.GossipInterval < 0, c.NotifySubscribersInterval < 0, c.PruningInterval < 0,
		c.MaxPruningDissemination < 0, c.PruningMarkerTimeToLive < 0:
		return bad("negative interval")
	case c.MaxDeltaElements < 0, c.MaxDeltaSize < 0, c.MaxMessageSize < 0:
		return bad("negative size")
	case c.MaxMessageSize > 0 && c.MaxMessageSize < 1024:
		return bad("MaxMessageSize %d (at least 1 KiB)", c.MaxMessageSize)
	case len(c.DurableKeys) > 0 && c.DurableDir == "":
		return bad("DurableDir is required with DurableKeys")
	}
	for _, p := range c.DurableKeys {
		if p == "" || strings.Contains(strings.TrimSuffix(p, "*"), "*") {
			return bad("durable key pattern %q: an id, or a prefix ending in '*'", p)
		}
	}
	return nil
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.GossipInterval == 0 {
		c.GossipInterval = DefaultGossipInterval
	}
	if c.NotifySubscribersInterval == 0 {
		c.NotifySubscribersInterval = DefaultNotifyInterval
	}
	if c.MaxDeltaElements == 0 {
		c.MaxDeltaElements = DefaultMaxDeltaElements
	}
	if c.MaxDeltaSize == 0 {
		c.MaxDeltaSize = DefaultMaxDeltaSize
	}
	if c.PruningInterval == 0 {
		c.PruningInterval = DefaultPruningInterval
	}
	if c.MaxPruningDissemination == 0 {
		c.MaxPruningDissemination = DefaultMaxPruningDissemination
	}
	if c.PruningMarkerTimeToLive == 0 {
		c.PruningMarkerTimeToLive = DefaultPruningMarkerTimeToLive
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	return c
}

// durableMatcher tells which keys are durable.
type durableMatcher struct {
	exact    map[string]bool
	prefixes []string
}

func newDurableMatcher(patterns []string) durableMatcher {
	m := durableMatcher{exact: make(map[string]bool)}
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			m.prefixes = append(m.prefixes, prefix)
		} else {
			m.exact[p] = true
		}
	}
	return m
}

// match reports whether key is durable.
func (m durableMatcher) match(key string) bool {
	if m.exact[key] {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
