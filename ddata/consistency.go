package ddata

import (
	"fmt"
	"time"
)

// levelKind is how many replicas a read or write involves.
type levelKind uint8

const (
	levelLocal levelKind = iota
	levelFrom
	levelMajority
	levelAll
)

// level is the common part of ReadConsistency and WriteConsistency.
type level struct {
	kind       levelKind
	n          int // levelFrom: replicas, the local one included
	additional int // levelMajority: nodes beyond the majority (the Plus levels)
	minCap     int // levelMajority: the least number of replicas
	timeout    time.Duration
}

func (l level) validate() error {
	switch l.kind {
	case levelLocal:
		return nil
	case levelFrom:
		if l.n < 2 {
			return fmt.Errorf("%w: From(%d) needs at least 2 replicas (1 is Local)", ErrInvalidConsistency, l.n)
		}
	case levelMajority:
		if l.additional < 0 || l.minCap < 0 {
			return fmt.Errorf("%w: majority with additional %d and minCap %d", ErrInvalidConsistency, l.additional, l.minCap)
		}
	case levelAll:
	default:
		return fmt.Errorf("%w: unknown level %d", ErrInvalidConsistency, l.kind)
	}
	if l.timeout <= 0 {
		return fmt.Errorf("%w: timeout %v is not positive", ErrInvalidConsistency, l.timeout)
	}
	return nil
}

// required returns how many replicas, the local one included, must take part when
// n nodes count (the local one included, n >= 1). It is at least 1, and at most n
// except for levelFrom, which asks for exactly l.n replicas (as Akka's ReadFrom and
// WriteTo do): with fewer nodes it cannot succeed.
func (l level) required(n int) int {
	n = max(n, 1)
	switch l.kind {
	case levelFrom:
		return l.n
	case levelMajority:
		return majority(n, l.additional, l.minCap)
	case levelAll:
		return n
	}
	return 1
}

// excludesExiting reports whether Exiting nodes are left out of the count: for the
// All and Plus levels, whose nodes should stay around for the next read.
func (l level) excludesExiting() bool {
	return l.kind == levelAll || (l.kind == levelMajority && l.additional > 0)
}

// majority returns min(n, max(n/2 + 1 + additional, minCap)): the replicas a majority
// level needs out of n nodes, the local one included.
func majority(n, additional, minCap int) int {
	return min(n, max(n/2+1+additional, minCap))
}

func (l level) String() string {
	switch l.kind {
	case levelLocal:
		return "Local"
	case levelFrom:
		return fmt.Sprintf("From(%d, %v)", l.n, l.timeout)
	case levelMajority:
		if l.additional > 0 {
			return fmt.Sprintf("MajorityPlus(%v, +%d, minCap %d)", l.timeout, l.additional, l.minCap)
		}
		return fmt.Sprintf("Majority(%v, minCap %d)", l.timeout, l.minCap)
	case levelAll:
		return fmt.Sprintf("All(%v)", l.timeout)
	}
	return "?"
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
	return ReadConsistency{level{kind: levelFrom, n: n, timeout: timeout}}
}

// ReadMajority reads a majority of the replicas, and at least minCap of them (as
// many as there are, when fewer): min(N, max(N/2+1, minCap)) of N.
func ReadMajority(timeout time.Duration, minCap int) ReadConsistency {
	return ReadConsistency{level{kind: levelMajority, minCap: minCap, timeout: timeout}}
}

// ReadMajorityPlus reads a majority plus additional replicas, and at least minCap:
// min(N, max(N/2+1+additional, minCap)) of N, Exiting nodes left out.
func ReadMajorityPlus(timeout time.Duration, additional, minCap int) ReadConsistency {
	return ReadConsistency{level{kind: levelMajority, additional: additional, minCap: minCap, timeout: timeout}}
}

// ReadAll reads every replica (Exiting nodes left out).
func ReadAll(timeout time.Duration) ReadConsistency {
	return ReadConsistency{level{kind: levelAll, timeout: timeout}}
}

// Timeout returns how long the read may take (0 for ReadLocal).
func (c ReadConsistency) Timeout() time.Duration { return c.l.timeout }

// Required returns how many replicas, the local one included, the read needs when
// n nodes count (n includes the local node): at most n, except for ReadFrom.
func (c ReadConsistency) Required(n int) int { return c.l.required(n) }

// IsLocal reports whether c is ReadLocal.
func (c ReadConsistency) IsLocal() bool { return c.l.kind == levelLocal }

// Validate reports a level that cannot be used, wrapping ErrInvalidConsistency.
func (c ReadConsistency) Validate() error { return c.l.validate() }

// String returns the level, such as "Majority(3s, minCap 5)".
func (c ReadConsistency) String() string { return "Read" + c.l.String() }

// WriteLocal writes the local replica only.
func WriteLocal() WriteConsistency { return WriteConsistency{} }

// WriteTo writes n replicas (n >= 2, the local one included). n counts exactly:
// while fewer than n nodes count, the write fails at once with
// ErrNotEnoughReplicas (it is still applied locally).
func WriteTo(n int, timeout time.Duration) WriteConsistency {
	return WriteConsistency{level{kind: levelFrom, n: n, timeout: timeout}}
}

// WriteMajority writes a majority of the replicas, and at least minCap of them:
// min(N, max(N/2+1, minCap)) of N.
func WriteMajority(timeout time.Duration, minCap int) WriteConsistency {
	return WriteConsistency{level{kind: levelMajority, minCap: minCap, timeout: timeout}}
}

// WriteMajorityPlus writes a majority plus additional replicas, and at least minCap:
// min(N, max(N/2+1+additional, minCap)) of N, Exiting nodes left out.
func WriteMajorityPlus(timeout time.Duration, additional, minCap int) WriteConsistency {
	return WriteConsistency{level{kind: levelMajority, additional: additional, minCap: minCap, timeout: timeout}}
}

// WriteAll writes every replica (Exiting nodes left out).
func WriteAll(timeout time.Duration) WriteConsistency {
	return WriteConsistency{level{kind: levelAll, timeout: timeout}}
}

// Timeout returns how long the write may take (0 for WriteLocal).
func (c WriteConsistency) Timeout() time.Duration { return c.l.timeout }

// Required returns how many replicas, the local one included, must have the write
// when n nodes count (n includes the local node): at most n, except for WriteTo.
func (c WriteConsistency) Required(n int) int { return c.l.required(n) }

// IsLocal reports whether c is WriteLocal.
func (c WriteConsistency) IsLocal() bool { return c.l.kind == levelLocal }

// Validate reports a level that cannot be used, wrapping ErrInvalidConsistency.
func (c WriteConsistency) Validate() error { return c.l.validate() }

// String returns the level, such as "WriteAll(5s)".
func (c WriteConsistency) String() string { return "Write" + c.l.String() }
