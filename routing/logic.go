package routing

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"

	"github.com/troupe-go/troupe/actor"
)

// Logic chooses the routees of each message. A Logic is a small value that a router
// holds for its whole life; the routing itself is done by the Selector that Prepare
// returns for the router's current routees, so that whatever a logic builds from the
// routees (a hash ring) is built once per change of routees, not once per message.
type Logic interface {
	// Prepare returns the Selector for routees. The router calls it each time its
	// routees change, on one goroutine at a time; it must not modify or keep a
	// reference to routees beyond the Selector it returns (routees is not modified
	// afterwards, so a Selector may keep it).
	Prepare(routees []actor.Ref) Selector
}

// Selector routes messages among one set of routees.
type Selector interface {
	// Select returns the routees msg goes to: one for most logics, all of them for
	// broadcasting logics. It is called by every sender at once, so it must be safe
	// for concurrent use, and it should not allocate (returning a sub-slice of the
	// prepared routees does not). It returns an error (ErrNoRoutees, ErrNoKey) when the
	// message has nowhere to go.
	Select(msg any) ([]actor.Ref, error)
}

// Errors of routing. The router publishes a message it cannot route as a dead letter
// with one of them as the reason, and returns the error to the sender.
var (
	// ErrNoRoutees: the router has no routee at the moment.
	ErrNoRoutees = errors.New("routing: router has no routees")
	// ErrNoKey: a consistent-hashing router got a message it can find no key for.
	ErrNoKey = errors.New("routing: no consistent-hashing key for the message")
	// ErrInvalidConfig wraps the reason a router's configuration is rejected.
	ErrInvalidConfig = errors.New("routing: invalid config")
)

// RoundRobin returns the logic that sends each message to the next routee in turn,
// with one atomic counter shared by all senders (and kept across changes of the
// routees).
func RoundRobin() Logic { return &roundRobin{} }

type roundRobin struct{ next paddedCounter }

// paddedCounter is an atomic counter alone on its cache lines. Every sender writes it,
// so sharing a line with anything else (the routees' own counters, say, allocated
// next to it) would make each routed message contend with unrelated writes.
type paddedCounter struct {
	_ [64]byte
	atomic.Uint64
	_ [56]byte
}

func (l *roundRobin) Prepare(routees []actor.Ref) Selector {
	return &roundRobinSelector{next: &l.next, routees: routees, div: newDivisor(len(routees))}
}

type roundRobinSelector struct {
	next    *paddedCounter
	routees []actor.Ref
	div     divisor
}

func (s *roundRobinSelector) Select(any) ([]actor.Ref, error) {
	if len(s.routees) == 0 {
		return nil, ErrNoRoutees
	}
	i := s.pick()
	return s.routees[i : i+1], nil
}

// pick returns the index of the next routee; there must be one.
func (s *roundRobinSelector) pick() uint64 {
	return s.div.mod(uint32(s.next.Add(1) - 1))
}

// divisor computes x mod d with a multiplication instead of a division (Lemire's
// "faster remainder by direct computation"), which is several times cheaper on the
// routing path. The counter it is used with wraps at 2^32, where the turn skips
// ahead once.
type divisor struct{ m, d uint64 }

func newDivisor(d int) divisor {
	if d <= 0 {
		return divisor{}
	}
	return divisor{m: ^uint64(0)/uint64(d) + 1, d: uint64(d)}
}

func (v divisor) mod(x uint32) uint64 {
	hi, _ := bits.Mul64(v.m*uint64(x), v.d)
	return hi
}

// Random returns the logic that sends each message to a routee picked at random.
func Random() Logic { return randomLogic{} }

type randomLogic struct{}

func (randomLogic) Prepare(routees []actor.Ref) Selector { return randomSelector(routees) }

type randomSelector []actor.Ref

func (s randomSelector) Select(any) ([]actor.Ref, error) {
	if len(s) == 0 {
		return nil, ErrNoRoutees
	}
	i := rand.IntN(len(s))
	return s[i : i+1], nil
}

// ToAll returns the logic that sends every message to every routee (a broadcasting
// router). To broadcast one message through a router of another logic, wrap it in
// Broadcast.
func ToAll() Logic { return toAll{} }

type toAll struct{}

func (toAll) Prepare(routees []actor.Ref) Selector { return allSelector(routees) }

type allSelector []actor.Ref

func (s allSelector) Select(any) ([]actor.Ref, error) {
	if len(s) == 0 {
		return nil, ErrNoRoutees
	}
	return s, nil
}
