package mailbox

import (
	"errors"
	"strconv"
)

// ErrInvalidConfig is wrapped by every error a constructor in this package returns for a
// configuration it cannot build, such as a capacity below one or an unknown Overflow.
var ErrInvalidConfig = errors.New("mailbox: invalid config")

// Mailbox is what the actor runtime needs from a mailbox other than the default Queue.
//
// Offer may be called from any goroutine. Pop and Empty belong to the consumer: at most
// one goroutine calls them at a time. An implementation never blocks in Offer, and once
// Offer has returned Accepted or DroppedOldest, the element is visible to Pop and Empty.
type Mailbox[T any] interface {
	// Offer tries to queue v and reports what happened. When r is DroppedNewest or
	// DroppedOldest, dropped is the element that was lost; otherwise it is the zero value.
	Offer(v T) (dropped T, r Result)
	// Pop removes and returns the next element, or reports ok == false when there is none.
	Pop() (v T, ok bool)
	// Empty reports whether Pop would find nothing now.
	Empty() bool
}

// Result is what Offer did with an element.
type Result int

const (
	// Accepted means the element is queued and nothing was dropped.
	Accepted Result = iota
	// DroppedNewest means the mailbox was full: the offered element itself was dropped
	// and is returned as dropped.
	DroppedNewest
	// DroppedOldest means the element is queued and, to make room, the oldest element
	// was dropped and is returned as dropped.
	DroppedOldest
	// Rejected means the mailbox was full and the element was not queued; the caller is
	// expected to report an error to the sender rather than treat it as a dead letter.
	Rejected
)

// String returns the constant's name, or "Result(n)" for a value outside the constants.
func (r Result) String() string {
	switch r {
	case Accepted:
		return "Accepted"
	case DroppedNewest:
		return "DroppedNewest"
	case DroppedOldest:
		return "DroppedOldest"
	case Rejected:
		return "Rejected"
	}
	return "Result(" + strconv.Itoa(int(r)) + ")"
}

// Overflow is the policy of a Bounded mailbox for an element offered while it is full.
type Overflow int

const (
	// DropNewest drops the offered element (Offer returns DroppedNewest). It is the zero
	// value, so a zero Overflow is a valid policy.
	DropNewest Overflow = iota
	// DropOldest drops the oldest queued element to make room (Offer returns DroppedOldest).
	DropOldest
	// Reject refuses the offered element (Offer returns Rejected).
	Reject
)

// String returns the constant's name, or "Overflow(n)" for a value outside the constants.
func (o Overflow) String() string {
	switch o {
	case DropNewest:
		return "DropNewest"
	case DropOldest:
		return "DropOldest"
	case Reject:
		return "Reject"
	}
	return "Overflow(" + strconv.Itoa(int(o)) + ")"
}

// valid reports whether o is one of the declared policies.
func (o Overflow) valid() bool {
	return o >= DropNewest && o <= Reject
}
