package replication

import (
	"fmt"
	"time"
)

// LevelKind is how many replicas a read or write involves.
type LevelKind uint8

// The kinds of level.
const (
	Local    LevelKind = iota // the local replica only
	From                      // exactly N replicas, the local one included
	Majority                  // a majority (plus Additional), at least MinCap
	All                       // every replica
)

// Level is a consistency level: the common part of ddata's ReadConsistency and
// WriteConsistency. The zero value is Local.
type Level struct {
	Kind       LevelKind
	N          int // From: replicas, the local one included
	Additional int // Majority: nodes beyond the majority (the Plus levels)
	MinCap     int // Majority: the least number of replicas
	Timeout    time.Duration
}

// Required returns how many replicas, the local one included, must take part when
// n nodes count (the local one included, n >= 1). It is at least 1, and at most n
// except for From, which asks for exactly N replicas (as Akka's ReadFrom and
// WriteTo do): with fewer nodes it cannot succeed.
func (l Level) Required(n int) int {
	n = max(n, 1)
	switch l.Kind {
	case From:
		return l.N
	case Majority:
		return MajorityOf(n, l.Additional, l.MinCap)
	case All:
		return n
	}
	return 1
}

// ExcludesExiting reports whether Exiting nodes are left out of the count: for the
// All and Plus levels, whose nodes should stay around for the next read.
func (l Level) ExcludesExiting() bool {
	return l.Kind == All || (l.Kind == Majority && l.Additional > 0)
}

// MajorityOf returns min(n, max(n/2 + 1 + additional, minCap)): the replicas a
// majority level needs out of n nodes, the local one included.
func MajorityOf(n, additional, minCap int) int {
	return min(n, max(n/2+1+additional, minCap))
}

// String returns the level, such as "Majority(3s, minCap 5)".
func (l Level) String() string {
	switch l.Kind {
	case Local:
		return "Local"
	case From:
		return fmt.Sprintf("From(%d, %v)", l.N, l.Timeout)
	case Majority:
		if l.Additional > 0 {
			return fmt.Sprintf("MajorityPlus(%v, +%d, minCap %d)", l.Timeout, l.Additional, l.MinCap)
		}
		return fmt.Sprintf("Majority(%v, minCap %d)", l.Timeout, l.MinCap)
	case All:
		return fmt.Sprintf("All(%v)", l.Timeout)
	}
	return "?"
}
