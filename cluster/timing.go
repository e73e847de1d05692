package cluster

import (
	"time"

	"github.com/troupe-go/troupe/internal/reachability"
)

// Timing tunes gossip and failure detection. A zero field keeps its default: serf's
// LAN settings for serf's fields, and Akka's cluster failure detector for the
// heartbeats.
//
// Two failure detectors run side by side: serf's (memberlist's probes, with indirect
// probes through other members) and Troupe's own heartbeats over the remote transport,
// which each member sends to about five others. A member is unreachable as soon as one
// of its heartbeat observers, or the serf of a member that does not heartbeat it, says
// so.
type Timing struct {
	// GossipInterval is how often serf gossips. Default 200ms.
	GossipInterval time.Duration
	// ProbeInterval and ProbeTimeout pace serf's failure detection. Defaults 1s and
	// 500ms.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// SuspicionMult scales how long serf suspects a member before declaring it failed
	// (SuspicionMult * log10(members) probe intervals, at least one). Default 4.
	SuspicionMult int
	// SuspicionMaxTimeoutMult bounds how far a suspicion's timeout stretches while few
	// other members confirm it. Default 6; 1 makes it fixed.
	SuspicionMaxTimeoutMult int
	// PushPullInterval is how often serf exchanges full state with a random member.
	// Default 30s.
	PushPullInterval time.Duration
	// LeavePropagateDelay is how long a leaving node waits for its leave to spread.
	// Default 1s.
	LeavePropagateDelay time.Duration

	// HeartbeatInterval is how often a member heartbeats each member it monitors, over
	// the remote transport, and how often it gossips its reachability observations to a
	// few members. Default 1s.
	HeartbeatInterval time.Duration
	// AcceptableHeartbeatPause is how long answers may be missing (a garbage
	// collection, a busy network) before suspicion rises; a monitored member is
	// unreachable about HeartbeatInterval plus this after its last answer. Default 3s.
	AcceptableHeartbeatPause time.Duration
}

// heartbeat detector settings derived from Timing, as Akka's cluster failure detector.
const (
	heartbeatThreshold  = 8
	heartbeatMonitors   = 5
	heartbeatMaxSamples = 1000
)

// TestTiming returns timing for tests on one machine: a crash or a partition is
// detected in about 2s to 2.6s, by serf (a fixed suspicion timeout of 2s) and by the
// heartbeats, which tolerate 2s of missing answers. That is slow for a network but
// what a loaded test machine needs (several nodes in one process under -race, on two
// cores shared with other work): shorter timeouts made members of one side flap. Its
// DetectionSpread is about 0.66s, so a stable-after of 1.4s or more passes Validate;
// testkit/multinode uses 2s.
func TestTiming() Timing {
	return Timing{
		GossipInterval: 50 * time.Millisecond,
		ProbeInterval:  400 * time.Millisecond,
		ProbeTimeout:   300 * time.Millisecond,
		SuspicionMult:  5,
		// A fixed suspicion timeout keeps the members' failure detections close
		// together.
		SuspicionMaxTimeoutMult:  1,
		PushPullInterval:         time.Second,
		LeavePropagateDelay:      100 * time.Millisecond,
		HeartbeatInterval:        200 * time.Millisecond,
		AcceptableHeartbeatPause: 2 * time.Second,
	}
}

// withDefaults fills in the zero fields.
func (t Timing) withDefaults() Timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&t.GossipInterval, 200*time.Millisecond)
	def(&t.ProbeInterval, time.Second)
	def(&t.ProbeTimeout, 500*time.Millisecond)
	def(&t.PushPullInterval, 30*time.Second)
	def(&t.LeavePropagateDelay, time.Second)
	def(&t.HeartbeatInterval, time.Second)
	def(&t.AcceptableHeartbeatPause, 3*time.Second)
	if t.SuspicionMult == 0 {
		t.SuspicionMult = 4
	}
	if t.SuspicionMaxTimeoutMult == 0 {
		t.SuspicionMaxTimeoutMult = 6
	}
	return t
}

// monitorConfig returns the heartbeat detector's settings.
func (t Timing) monitorConfig() reachability.MonitorConfig {
	t = t.withDefaults()
	return reachability.MonitorConfig{
		Interval:        t.HeartbeatInterval,
		AcceptablePause: t.AcceptableHeartbeatPause,
		Threshold:       heartbeatThreshold,
		MinStdDeviation: t.HeartbeatInterval / 10,
		ExpectedFirst:   t.HeartbeatInterval,
		Monitors:        heartbeatMonitors,
		MaxSamples:      heartbeatMaxSamples,
	}
}

// DetectionSpread estimates, for this timing, the longest time that can pass between
// two changes of a node's view that one failure causes: the other side of a partition
// is not detected all at once, since each member is detected on its own schedule, by
// the first of serf and the heartbeats. The split-brain resolver must wait longer than
// that (Validate asks for DowningConfig.StableAfter of at least twice it), or a side
// could decide on half a picture and both sides could survive.
//
// The estimate is the latest heartbeat detection (interval, acceptable pause and a
// jitter margin after the last answer), plus one HeartbeatInterval for an observation
// to reach this node from another observer, minus the earliest detection by either
// detector (serf cannot declare a member failed before its suspicion timeout of
// SuspicionMult probe intervals; its report counts for the members this node does not
// heartbeat itself).
// It assumes steady answers before the failure; a machine so loaded that answers and
// timers are late by more than the acceptable pause needs a longer stable-after.
//
// With the defaults it is about 2.8s (StableAfter at least 5.6s; the default is 20s);
// with TestTiming about 0.66s (StableAfter at least 1.33s).
func (t Timing) DetectionSpread() time.Duration {
	t = t.withDefaults()
	earliest, latest := t.monitorConfig().DetectionWindow()
	serfEarliest := time.Duration(t.SuspicionMult) * t.ProbeInterval
	return latest + t.HeartbeatInterval - min(earliest, serfEarliest)
}
