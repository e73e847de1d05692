package reachability

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/internal/phi"
	"github.com/troupe-go/troupe/member"
)

// ErrInvalidConfig is returned by MonitorConfig.Validate and NewMonitor.
var ErrInvalidConfig = errors.New("reachability: invalid configuration")

// MonitorConfig configures the heartbeats a node sends and the failure detector that
// judges the answers.
type MonitorConfig struct {
	// Interval is how often a heartbeat goes to each monitored member.
	Interval time.Duration
	// AcceptablePause is how long answers may be missing (a pause, a busy network)
	// before suspicion rises.
	AcceptablePause time.Duration
	// Threshold is the suspicion level (phi) above which a member is unreachable.
	Threshold float64
	// MinStdDeviation keeps the detector from being too sharp when answers arrive with
	// little jitter.
	MinStdDeviation time.Duration
	// ExpectedFirst is how long a newly monitored member has to answer its first
	// heartbeat before the detector starts as if it had.
	ExpectedFirst time.Duration
	// Monitors is how many reachable members each member monitors.
	Monitors int
	// MaxSamples is how many intervals the detector remembers.
	MaxSamples int
}

// Validate reports settings that are not positive.
func (c MonitorConfig) Validate() error {
	if c.Interval <= 0 || c.AcceptablePause < 0 || c.Threshold <= 0 || c.MinStdDeviation <= 0 ||
		c.ExpectedFirst < 0 || c.Monitors <= 0 || c.MaxSamples <= 0 {
		return fmt.Errorf("%w: %+v", ErrInvalidConfig, c)
	}
	return nil
}

// MaxResponseAge is the oldest heartbeat whose answer still counts: answers that took
// longer (a backlog delivered after a connection came back) say nothing about now.
func (c MonitorConfig) MaxResponseAge() time.Duration { return c.AcceptablePause + 2*c.Interval }

// DetectionWindow returns the earliest and the latest time after a member stops
// answering at which the detector declares it unreachable, when its answers came
// steadily before: the expected interval plus the pause plus the jitter margin, counted
// from the last answer, which came up to one interval before the stop. The jitter
// margin is taken at MinStdDeviation for the earliest and at a quarter of the interval
// (the spread the detector starts with) for the latest, if that is larger.
func (c MonitorConfig) DetectionWindow() (earliest, latest time.Duration) {
	y := phi.Deviations(c.Threshold)
	std := max(c.MinStdDeviation, c.Interval/4)
	earliest = c.AcceptablePause + time.Duration(y*float64(c.MinStdDeviation))
	latest = c.Interval + c.AcceptablePause + time.Duration(y*float64(std)) + 2*time.Millisecond
	return earliest, latest
}

// target is a monitored member.
type target struct {
	added       time.Time
	det         *phi.Detector
	lastSentAt  time.Time // send time of the newest heartbeat whose answer counted
	unreachable bool
}

// Monitor is the heartbeat side of a node's failure detection, after Akka's cluster
// heartbeat: each member heartbeats a few others, chosen on a ring so that every member
// is watched by about Monitors others, and judges their answers with a phi-accrual
// detector. It is pure: the caller sends the heartbeats to Targets, feeds the answers
// to Response, and asks Check at the times NextCheck returns. It is not safe for
// concurrent use.
type Monitor struct {
	cfg     MonitorConfig
	y       float64
	self    member.UniqueAddress
	targets map[member.UniqueAddress]*target
}

// NewMonitor returns the monitor of node self, watching nobody yet.
func NewMonitor(cfg MonitorConfig, self member.UniqueAddress) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Monitor{cfg: cfg, y: phi.Deviations(cfg.Threshold), self: self, targets: make(map[member.UniqueAddress]*target)}, nil
}

// ringKey orders members on the ring: by a hash of the identity, so that neighbours on
// the ring are not neighbours by address, then by address.
func ringKey(u member.UniqueAddress) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(u.Addr))
	_, _ = h.Write([]byte(strconv.FormatUint(u.UID, 10)))
	return h.Sum64()
}

// Ring returns the members self monitors among members (self's entry, if any, is its
// position; it is added otherwise): walking the ring from self, every member until
// Monitors of them are reachable by self's own observations (unreachable ones met on
// the way stay monitored, so that their recovery is noticed).
func Ring(self member.UniqueAddress, members []member.UniqueAddress, unreachable func(member.UniqueAddress) bool, monitors int) []member.UniqueAddress {
	ring := append([]member.UniqueAddress{self}, members...)
	slices.SortFunc(ring, func(a, b member.UniqueAddress) int {
		ka, kb := ringKey(a), ringKey(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return member.CompareAddress(a, b)
	})
	ring = slices.Compact(ring)
	at := slices.Index(ring, self)
	var out []member.UniqueAddress
	reachable := 0
	for i := 1; i < len(ring) && reachable < monitors; i++ {
		u := ring[(at+i)%len(ring)]
		out = append(out, u)
		if !unreachable(u) {
			reachable++
		}
	}
	slices.SortFunc(out, member.CompareAddress)
	return out
}

// SetTargets makes the monitored members exactly targets (see Ring), from now on. A
// member no longer monitored is forgotten; a new one has ExpectedFirst to answer.
func (m *Monitor) SetTargets(targets []member.UniqueAddress, now time.Time) {
	keep := make(map[member.UniqueAddress]bool, len(targets))
	for _, u := range targets {
		if u == m.self {
			continue
		}
		keep[u] = true
		if _, ok := m.targets[u]; !ok {
			m.targets[u] = &target{added: now, det: phi.New(phi.Config{AcceptablePause: m.cfg.AcceptablePause, MinStdDeviation: m.cfg.MinStdDeviation, MaxSamples: m.cfg.MaxSamples})}
		}
	}
	for u := range m.targets {
		if !keep[u] {
			delete(m.targets, u)
		}
	}
}

// Targets returns the monitored members, ordered by address: send each a heartbeat
// every Interval.
func (m *Monitor) Targets() []member.UniqueAddress {
	out := make([]member.UniqueAddress, 0, len(m.targets))
	for u := range m.targets {
		out = append(out, u)
	}
	slices.SortFunc(out, member.CompareAddress)
	return out
}

// Response records that from answered, at now, the heartbeat this node sent at sentAt
// (its own clock, carried in the heartbeat and echoed). It reports whether the answer
// counted: answers from members not monitored, answers older than one that already
// counted, and answers older than MaxResponseAge are ignored.
func (m *Monitor) Response(from member.UniqueAddress, sentAt, now time.Time) bool {
	t, ok := m.targets[from]
	if !ok || !sentAt.After(t.lastSentAt) || now.Sub(sentAt) > m.cfg.MaxResponseAge() {
		return false
	}
	t.lastSentAt = sentAt
	t.det.Heartbeat(now, m.cfg.Interval)
	return true
}

// Check judges every monitored member at now and returns those that became
// unreachable and those that became reachable again since the last Check, ordered by
// address.
func (m *Monitor) Check(now time.Time) (unreachable, reachable []member.UniqueAddress) {
	for _, u := range m.Targets() {
		t := m.targets[u]
		if !t.det.Started() {
			if now.Before(t.added.Add(m.cfg.ExpectedFirst)) {
				continue
			}
			t.det.Start(t.added.Add(m.cfg.ExpectedFirst), m.cfg.Interval, true)
		}
		down := t.det.Phi(now) >= m.cfg.Threshold
		switch {
		case down && !t.unreachable:
			unreachable = append(unreachable, u)
		case !down && t.unreachable:
			reachable = append(reachable, u)
		}
		t.unreachable = down
	}
	return unreachable, reachable
}

// Monitors reports whether u is one of the monitored members.
func (m *Monitor) Monitors(u member.UniqueAddress) bool {
	_, ok := m.targets[u]
	return ok
}

// Unreachable returns the monitored members the last Check found unreachable, ordered
// by address.
func (m *Monitor) Unreachable() []member.UniqueAddress {
	var out []member.UniqueAddress
	for _, u := range m.Targets() {
		if m.targets[u].unreachable {
			out = append(out, u)
		}
	}
	return out
}

// NextCheck returns the earliest moment Check can find a change without a new answer:
// when a reachable member's suspicion reaches the threshold, or when a new member's
// time for its first answer ends. ok is false when nothing is monitored or every
// monitored member is already unreachable (only an answer changes that).
func (m *Monitor) NextCheck() (at time.Time, ok bool) {
	for _, t := range m.targets {
		var when time.Time
		switch {
		case !t.det.Started():
			when = t.added.Add(m.cfg.ExpectedFirst)
		case !t.unreachable:
			when = t.det.Crossing(m.y)
		default:
			continue
		}
		if !ok || when.Before(at) {
			at, ok = when, true
		}
	}
	return at, ok
}
