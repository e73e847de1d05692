package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is what a fault event does.
type Kind int

// The kinds of fault events. Graceful ones (Join, Leave) are what an operator does;
// the others are failures.
const (
	Crash     Kind = iota // a node's process dies: its links are cut, its journal unplugged
	Restart               // a crashed or departed node starts again as a new incarnation
	Leave                 // a node shuts down gracefully (coordinated shutdown)
	Join                  // a new node starts and joins
	Partition             // the nodes split into Sides; links between sides are cut both ways
	OneWay                // the link From -> To is cut one way
	Delay                 // the link between From and To (both ways) is delayed by Delay
	Loss                  // gossip packets between From and To (both ways) are lost with Loss
	Slow                  // every link of Node is delayed by Delay
	Heal                  // every link fault ends (crashed nodes stay down)
)

var kindNames = [...]string{"crash", "restart", "leave", "join", "partition", "one-way cut", "delay", "loss", "slow node", "heal"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// graceful reports whether the kind is an operator's change rather than a failure.
func (k Kind) graceful() bool { return k == Join || k == Leave }

// crossing returns the links, [from, to], from an earlier side of a partition to a
// later one; back reverses them.
func (e Event) crossing(back bool) [][2]int {
	var links [][2]int
	for i, a := range e.Sides {
		for _, b := range e.Sides[i+1:] {
			for _, x := range a {
				for _, y := range b {
					if back {
						links = append(links, [2]int{y, x})
					} else {
						links = append(links, [2]int{x, y})
					}
				}
			}
		}
	}
	return links
}

// seedsUp counts the seed nodes (the first nodes) that are up.
func seedsUp(up []bool, nodes int) int {
	k := 0
	for _, u := range up[:nodes] {
		if u {
			k++
		}
	}
	return k
}

// Event is one step of a fault schedule.
type Event struct {
	At       time.Duration // after the simulation starts
	Kind     Kind
	Node     int           // Crash, Restart, Leave, Join (the new node's index), Slow
	Sides    [][]int       // Partition
	From, To int           // OneWay, Delay, Loss
	Delay    time.Duration // Delay, Slow; Partition: the second direction is cut that much later
	Loss     float64
}

// String describes the event, after its time.
func (e Event) String() string { return e.At.String() + "  " + e.what() }

// what describes the event.
func (e Event) what() string {
	switch e.Kind {
	case Crash, Restart, Leave, Join:
		return fmt.Sprintf("%s n%d", e.Kind, e.Node)
	case Partition:
		var sides []string
		for _, s := range e.Sides {
			sides = append(sides, fmt.Sprint(s))
		}
		return "partition " + strings.Join(sides, " | ") + fmt.Sprintf(" (the way back %v later)", e.Delay)
	case OneWay:
		return fmt.Sprintf("one-way cut n%d -> n%d", e.From, e.To)
	case Delay:
		return fmt.Sprintf("delay n%d <-> n%d by %v", e.From, e.To, e.Delay)
	case Loss:
		return fmt.Sprintf("loss n%d <-> n%d of %.0f%%", e.From, e.To, e.Loss*100)
	case Slow:
		return fmt.Sprintf("slow node n%d by %v", e.Node, e.Delay)
	default:
		return e.Kind.String()
	}
}

// Generate returns the fault schedule of seed for a cluster that starts with nodes
// nodes: faults events spread over span, then a heal and a restart of every node that
// is down, so that the cluster can converge. Crashes and leaves keep at least two
// nodes running; a restart brings back a node that crashed or left.
func Generate(seed uint64, nodes, faults int, span time.Duration) []Event {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	up := make([]bool, nodes)
	for i := range up {
		up[i] = true
	}
	running := func() []int {
		var r []int
		for i, u := range up {
			if u {
				r = append(r, i)
			}
		}
		return r
	}
	down := func() []int {
		var r []int
		for i, u := range up {
			if !u {
				r = append(r, i)
			}
		}
		return r
	}
	pick := func(s []int) int { return s[rng.IntN(len(s))] }
	var evs []Event
	at := time.Duration(0)
	step := span / time.Duration(faults+1)
	for range faults {
		at += step/2 + time.Duration(rng.Int64N(int64(step)))
		at = at.Round(100 * time.Millisecond)
		e := Event{At: at}
		r := running()
		for {
			e.Kind = Kind(rng.IntN(int(Heal) + 1))
			ok := true
			switch e.Kind {
			case Crash, Leave:
				ok = len(r) > 2 && seedsUp(up, nodes) > 2
			case Restart:
				ok = len(down()) > 0
			case Join:
				ok = len(up) < nodes+3
			case OneWay, Delay, Loss:
				ok = len(r) > 1
			}
			if ok {
				break
			}
		}
		switch e.Kind {
		case Crash, Leave:
			e.Node = pick(r)
			up[e.Node] = false
		case Restart:
			e.Node = pick(down())
			up[e.Node] = true
		case Join:
			e.Node = len(up)
			up = append(up, true)
		case Partition:
			all := rng.Perm(len(up))
			cuts := 1 + rng.IntN(2)
			bounds := []int{0}
			for range cuts {
				bounds = append(bounds, 1+rng.IntN(len(all)-1))
			}
			bounds = append(bounds, len(all))
			e.Delay = time.Duration(rng.IntN(8000)) * time.Millisecond
			slices.Sort(bounds)
			for i := 1; i < len(bounds); i++ {
				if bounds[i] > bounds[i-1] {
					e.Sides = append(e.Sides, all[bounds[i-1]:bounds[i]])
				}
			}
		case OneWay, Delay, Loss:
			e.From = pick(r)
			for e.To = pick(r); e.To == e.From; e.To = pick(r) {
			}
			e.Delay = time.Duration(50+rng.IntN(1950)) * time.Millisecond
			e.Loss = 0.1 + 0.8*rng.Float64()
		case Slow:
			e.Node = pick(r)
			e.Delay = time.Duration(50+rng.IntN(950)) * time.Millisecond
		}
		evs = append(evs, e)
	}
	at = (at + step).Round(100 * time.Millisecond)
	evs = append(evs, Event{At: at, Kind: Heal})
	for _, i := range down() {
		at += time.Second
		evs = append(evs, Event{At: at, Kind: Restart, Node: i})
	}
	return evs
}
