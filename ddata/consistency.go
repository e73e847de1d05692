package ddata

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/replication"
)

// level is the common part of ReadConsistency and WriteConsistency: the
// replication core's Level.
type level = replication.Level

// The kinds of level.
const (
	levelLocal    = replication.Local
	levelFrom     = replication.From
	levelMajority = replication.Majority
	levelAll      = replication.All
)

// validateLevel reports a level that cannot be used, wrapping
// ErrInvalidConsistency.
func validateLevel(l level) error {
	switch l.Kind {
	case levelLocal:
		return nil
	case levelFrom:
		if l.N < 2 {
			return fmt.Errorf("%w: From(%d) needs at least 2 replicas (1 is Local)", ErrInvalidConsistency, l.N)
		}
	case levelMajority:
		if l.Additional < 0 || l.MinCap < 0 {
			return fmt.Errorf("%w: majority with additional %d and minCap %d", ErrInvalidConsistency, l.Additional, l.MinCap)
		}
	case levelAll:
	default:
		return fmt.Errorf("%w: unknown level %d", ErrInvalidConsistency, l.Kind)
	}
	if l.Timeout <= 0 {
		return fmt.Errorf("%w: timeout %v is not positive", ErrInvalidConsistency, l.Timeout)
	}
	return nil
}

// ReadConsistency says how many replicas a Get consults. Build one with ReadLocal,
// ReadFrom, ReadMajority, ReadMajorityPlus or ReadAll; the zero value is ReadLocal.
//
// Counts include the local replica and only Up nodes; ReadAll and ReadMajorityPlus
// also leave out Exiting nodes. When the local node is the only Up node, the
// majority and All levels act as ReadLocal; ReadFrom(n) still needs n replicas.
// ReplicaCount tells how many nodes count.
type ReadConsistency struct{ l level }

// WriteConsistency says how many replicas must have an Update before it succeeds.
// Build one with WriteLocal, WriteTo, WriteMajority, WriteMajorityPlus or WriteAll;
// the zero value is WriteLocal. Counting follows ReadConsistency.
type WriteConsistency struct{ l level }

// ReadLocal reads the local replica only.
func ReadLocal() ReadConsistency { return ReadConsistency{} }

// ReadFrom reads n replicas (n >= 2, the local one included) and merges them. n
// counts exactly: while fewer than n nodes count, the read fails at once with
// ErrNotEnoughReplicas.
func ReadFrom(n int, timeout time.Duration) ReadConsistency {
	return ReadConsistency{level{Kind: levelFrom, N: n, Timeout: timeout}}
}

// ReadMajority reads a majority of the replicas, and at least minCap of them (as
// many as there are, when fewer): min(N, max(N/2+1, minCap)) of N.
func ReadMajority(timeout time.Duration, minCap int) ReadConsistency {
	return ReadConsistency{level{Kind: levelMajority, MinCap: minCap, Timeout: timeout}}
}

// ReadMajorityPlus reads a majority plus additional replicas, and at least minCap:
// min(N, max(N/2+1+additional, minCap)) of N, Exiting nodes left out.
func ReadMajorityPlus(timeout time.Duration, additional, minCap int) ReadConsistency {
	return ReadConsistency{level{Kind: levelMajority, Additional: additional, MinCap: minCap, Timeout: timeout}}
}

// ReadAll reads every replica (Exiting nodes left out).
func ReadAll(timeout time.Duration) ReadConsistency {
	return ReadConsistency{level{Kind: levelAll, Timeout: timeout}}
}

// Timeout returns how long the read may take (0 for ReadLocal).
func (c ReadConsistency) Timeout() time.Duration { return c.l.Timeout }

// Required returns how many replicas, the local one included, the read needs when
// n nodes count (n includes the local node): at most n, except for ReadFrom.
func (c ReadConsistency) Required(n int) int { return c.l.Required(n) }

// IsLocal reports whether c is ReadLocal.
func (c ReadConsistency) IsLocal() bool { return c.l.Kind == levelLocal }

// Validate reports a level that cannot be used, wrapping ErrInvalidConsistency.
func (c ReadConsistency) Validate() error { return validateLevel(c.l) }

// String returns the level, such as "Majority(3s, minCap 5)".
func (c ReadConsistency) String() string { return "Read" + c.l.String() }

// WriteLocal writes the local replica only.
func WriteLocal() WriteConsistency { return WriteConsistency{} }

// WriteTo writes n replicas (n >= 2, the local one included). n counts exactly:
// while fewer than n nodes count, the write fails at once with
// ErrNotEnoughReplicas (it is still applied locally).
func WriteTo(n int, timeout time.Duration) WriteConsistency {
	return WriteConsistency{level{Kind: levelFrom, N: n, Timeout: timeout}}
}

// WriteMajority writes a majority of the replicas, and at least minCap of them:
// min(N, max(N/2+1, minCap)) of N.
func WriteMajority(timeout time.Duration, minCap int) WriteConsistency {
	return WriteConsistency{level{Kind: levelMajority, MinCap: minCap, Timeout: timeout}}
}

// WriteMajorityPlus writes a majority plus additional replicas, and at least minCap:
// min(N, max(N/2+1+additional, minCap)) of N, Exiting nodes left out.
func WriteMajorityPlus(timeout time.Duration, additional, minCap int) WriteConsistency {
	return WriteConsistency{level{Kind: levelMajority, Additional: additional, MinCap: minCap, Timeout: timeout}}
}

// WriteAll writes every replica (Exiting nodes left out).
func WriteAll(timeout time.Duration) WriteConsistency {
	return WriteConsistency{level{Kind: levelAll, Timeout: timeout}}
}

// Timeout returns how long the write may take (0 for WriteLocal).
func (c WriteConsistency) Timeout() time.Duration { return c.l.Timeout }

// Required returns how many replicas, the local one included, must have the write
// when n nodes count (n includes the local node): at most n, except for WriteTo.
func (c WriteConsistency) Required(n int) int { return c.l.Required(n) }

// IsLocal reports whether c is WriteLocal.
func (c WriteConsistency) IsLocal() bool { return c.l.Kind == levelLocal }

// Validate reports a level that cannot be used, wrapping ErrInvalidConsistency.
func (c WriteConsistency) Validate() error { return validateLevel(c.l) }

// String returns the level, such as "WriteAll(5s)".
func (c WriteConsistency) String() string { return "Write" + c.l.String() }
