package sbr

import (
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
)

// resolverStep is one input to a Resolver and what it must answer.
type resolverStep struct {
	name       string
	membership time.Duration // > 0: MembershipChanged at this time first
	reach      time.Duration // > 0: ReachabilityChanged at this time first
	now        time.Duration
	in         Input
	lease      int // 1: LeaseResult(acquired), -1: LeaseResult(not acquired), 0: Step
	want       Action
	down       string
	acquire    bool
	unstable   bool
	next       time.Duration // -1: no deadline
}

func runResolver(t *testing.T, cfg Config, steps []resolverStep) {
	t.Helper()
	t0 := time.Unix(1000, 0)
	r, err := NewResolver(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.membership > 0 {
			r.MembershipChanged(t0.Add(s.membership))
		}
		if s.reach > 0 {
			r.ReachabilityChanged(t0.Add(s.reach))
		}
		now := t0.Add(s.now)
		if s.lease != 0 {
			d := r.LeaseResult(now, s.in, s.lease > 0)
			if d.Action != s.want || addrs(d.Down) != s.down {
				t.Fatalf("%s: LeaseResult = %s [%s], want %s [%s]", s.name, d.Action, addrs(d.Down), s.want, s.down)
			}
			continue
		}
		st := r.Step(now, s.in)
		if st.Decision.Action != s.want || addrs(st.Decision.Down) != s.down {
			t.Fatalf("%s: Step = %s [%s], want %s [%s]", s.name, st.Decision.Action, addrs(st.Decision.Down), s.want, s.down)
		}
		if st.AcquireLease != s.acquire || st.Unstable != s.unstable {
			t.Fatalf("%s: acquire %v unstable %v, want %v %v", s.name, st.AcquireLease, st.Unstable, s.acquire, s.unstable)
		}
		switch {
		case s.next < 0 && !st.Next.IsZero():
			t.Fatalf("%s: Next = %v, want none", s.name, st.Next.Sub(t0))
		case s.next >= 0 && !st.Next.Equal(t0.Add(s.next)):
			t.Fatalf("%s: Next = %v, want %v", s.name, st.Next.Sub(t0), s.next)
		}
		if !st.Next.IsZero() && !st.Next.After(now) {
			t.Fatalf("%s: Next %v is not after now %v", s.name, st.Next.Sub(t0), s.now)
		}
	}
}

const sec = time.Second

func TestResolverWaitsForStable(t *testing.T) {
	split := input(upMembers(5, nil), "a:1", "e:1")
	healthy := input(upMembers(5, nil), "a:1")
	runResolver(t, Config{StableAfter: 10 * sec}, []resolverStep{
		{name: "nothing unreachable: nothing due, ever", now: sec, in: healthy, next: -1},
		{name: "e unreachable: wait", reach: 2 * sec, now: 2 * sec, in: split, next: 12 * sec},
		{name: "not stable yet", now: 5 * sec, in: split, next: 12 * sec},
		{name: "a membership change restarts the wait", membership: 8 * sec, now: 8 * sec, in: split, next: 18 * sec},
		{name: "an older change is ignored", membership: 3 * sec, now: 17 * sec, in: split, next: 18 * sec},
		{name: "stable: decides", now: 18 * sec, in: split, want: DownUnreachable, down: "e:1", next: 28 * sec},
		{name: "right after a decision: no second one", now: 19 * sec, in: split, next: 28 * sec},
		{name: "healed: nothing due", reach: 20 * sec, now: 20 * sec, in: healthy, next: -1},
	})
}

func TestResolverFlappingDelaysThenDownsAll(t *testing.T) {
	split := input(upMembers(5, nil), "a:1", "d:1", "e:1")
	partly := input(upMembers(5, nil), "a:1", "e:1")
	healthy := input(upMembers(5, nil), "a:1")
	cfg := Config{StableAfter: 4 * sec, DownAllWhenUnstable: 3 * sec}
	runResolver(t, cfg, []resolverStep{
		{name: "first change", reach: sec, now: sec, in: split, next: 5 * sec},
		{name: "d flaps back: the wait restarts", reach: 3 * sec, now: 3 * sec, in: partly, next: 7 * sec},
		{name: "d unreachable again", reach: 5 * sec, now: 5 * sec, in: split, next: 8 * sec},
		{name: "flaps back again: the instability deadline is nearer", reach: 7 * sec, now: 7 * sec, in: partly, next: 8 * sec},
		{name: "stable+3/4 since the first change: down all", now: 8 * sec, in: partly,
			want: DownEveryone, down: "a:1,b:1,c:1,d:1,e:1", unstable: true, next: 12 * sec},
	})
	runResolver(t, cfg, []resolverStep{
		{name: "first change", reach: sec, now: sec, in: split, next: 5 * sec},
		{name: "all healed: the measurement ends", reach: 2 * sec, now: 2 * sec, in: healthy, next: -1},
		{name: "a new change starts it again", reach: 4 * sec, now: 4 * sec, in: split, next: 8 * sec},
		{name: "flap", reach: 6 * sec, now: 6 * sec, in: partly, next: 10 * sec},
		{name: "stable in time: an ordinary decision", now: 10 * sec, in: partly, want: DownUnreachable, down: "e:1", next: 14 * sec},
	})
	runResolver(t, Config{StableAfter: 4 * sec, DownAllWhenUnstable: -1}, []resolverStep{
		{name: "first change", reach: sec, now: sec, in: split, next: 5 * sec},
		{name: "flap", reach: 4 * sec, now: 4 * sec, in: partly, next: 8 * sec},
		{name: "flap", reach: 7 * sec, now: 7 * sec, in: split, next: 11 * sec},
		{name: "turned off: waits for stable", now: 9 * sec, in: split, next: 11 * sec},
	})
}

// TestResolverDecisionOfTheSide: a decision that reached this node from another member
// of its side (members it saw unreachable are Down) is the side's decision and ends
// the instability measurement, as this node's own would: the member it knew and the
// decider did not (e, still unreachable) is decided on after stable-after, not downed
// with the whole cluster for instability. A view that keeps changing afterwards is
// still downed for instability.
func TestResolverDecisionOfTheSide(t *testing.T) {
	cfg := Config{StableAfter: 4 * sec, DownAllWhenUnstable: 3 * sec}
	split := input(upMembers(5, nil), "a:1", "d:1", "e:1")
	dDowned := upMembers(5, nil)
	dDowned[3].Status = member.Down
	rest := input(dDowned, "a:1", "d:1", "e:1")
	runResolver(t, cfg, []resolverStep{
		{name: "d and e unreachable", reach: sec, now: sec, in: split, next: 5 * sec},
		{name: "e seen later", reach: 2 * sec, now: 2 * sec, in: split, next: 6 * sec},
		{name: "another member's decision downs d: the wait restarts, the measurement ends",
			membership: 5 * sec, reach: 5 * sec, now: 5 * sec, in: rest, next: 9 * sec},
		{name: "no down-all at stable+unstable since the first change", now: 8 * sec, in: rest, next: 9 * sec},
		{name: "stable: e is decided on", now: 9 * sec, in: rest, want: DownUnreachable, down: "e:1", next: 13 * sec},
	})
	restC := input(dDowned, "a:1", "c:1", "e:1")
	runResolver(t, cfg, []resolverStep{
		{name: "d and e unreachable", reach: sec, now: sec, in: split, next: 5 * sec},
		{name: "d downed elsewhere", membership: 4 * sec, reach: 4 * sec, now: 4 * sec, in: rest, next: 8 * sec},
		{name: "c unreachable too: a new measurement", reach: 6 * sec, now: 6 * sec, in: restC, next: 10 * sec},
		{name: "c flaps back", reach: 8 * sec, now: 8 * sec, in: rest, next: 12 * sec},
		{name: "and away", reach: 10 * sec, now: 10 * sec, in: restC, next: 13 * sec},
		{name: "stable+unstable since the new first change: down all", now: 13 * sec, in: restC,
			want: DownEveryone, down: "a:1,b:1,c:1,e:1", unstable: true, next: 17 * sec},
	})
}

func TestResolverInstabilityForgottenAfterQuiet(t *testing.T) {
	// A lease acquisition that takes long keeps the measurement running; after
	// 2*stable-after without a reachability change it is reset, and no down-all follows.
	cfg := Config{Strategy: LeaseMajority, StableAfter: 4 * sec, DownAllWhenUnstable: 10 * sec}
	split := input(upMembers(5, nil), "a:1", "d:1", "e:1")
	runResolver(t, cfg, []resolverStep{
		{name: "first change", reach: sec, now: sec, in: split, next: 5 * sec},
		{name: "stable: the majority's responsible member acquires", now: 5 * sec, in: split, acquire: true, next: -1},
		{name: "quiet for 2*stable-after: reset, nothing due", now: 9 * sec, in: split, next: -1},
		{name: "no down-all at stable+unstable", now: 15 * sec, in: split, next: -1},
		{name: "the lease arrives", now: 16 * sec, in: split, lease: 1, want: DownUnreachable, down: "d:1,e:1"},
	})
}

func TestResolverLeaseMajority(t *testing.T) {
	five := upMembers(5, nil)
	cfg := Config{Strategy: LeaseMajority, StableAfter: 4 * sec, DownAllWhenUnstable: 3 * sec, AcquireLeaseDelayForMinority: 2 * sec}
	majority := input(five, "a:1", "d:1", "e:1")
	minority := input(five, "d:1", "a:1", "b:1", "c:1")
	bystander := input(five, "b:1", "d:1", "e:1")
	bystander.Unreachable = append(bystander.Unreachable, Record{Observer: ua("a:1"), Subject: ua("d:1")})
	runResolver(t, cfg, []resolverStep{
		{name: "majority side, responsible: wait", reach: sec, now: sec, in: majority, next: 5 * sec},
		{name: "stable: acquire at once", now: 5 * sec, in: majority, acquire: true, next: 8 * sec},
		{name: "while acquiring: nothing new", now: 6 * sec, in: majority, next: 8 * sec},
		{name: "acquired: down the others", now: 7 * sec, in: majority, lease: 1, want: DownUnreachable, down: "d:1,e:1"},
		{name: "a stale result is ignored", now: 7 * sec, in: majority, lease: 1, want: NoAction},
	})
	runResolver(t, cfg, []resolverStep{
		{name: "majority side, lease held elsewhere", reach: sec, now: sec, in: majority, next: 5 * sec},
		{name: "stable: acquire", now: 5 * sec, in: majority, acquire: true, next: 8 * sec},
		{name: "not acquired: down own side", now: 6 * sec, in: majority, lease: -1, want: DownReachable, down: "a:1,b:1,c:1"},
	})
	runResolver(t, cfg, []resolverStep{
		{name: "minority side, responsible", reach: sec, now: sec, in: minority, next: 5 * sec},
		{name: "stable: wait for the majority first", now: 5 * sec, in: minority, next: 7 * sec},
		{name: "delay over: acquire", now: 7 * sec, in: minority, acquire: true, next: 8 * sec},
		{name: "not acquired: down own side", now: 7 * sec, in: minority, lease: -1, want: DownReachable, down: "d:1,e:1"},
	})
	runResolver(t, cfg, []resolverStep{
		{name: "not responsible: never acts", reach: sec, now: sec, in: bystander, next: -1},
		{name: "stable: still nothing", now: 5 * sec, in: bystander, next: -1},
		{name: "no down-all either", now: 30 * sec, in: bystander, next: -1},
	})
	runResolver(t, cfg, []resolverStep{
		{name: "minority side", reach: sec, now: sec, in: minority, next: 5 * sec},
		{name: "delayed", now: 5 * sec, in: minority, next: 7 * sec},
		{name: "healed meanwhile: no acquisition", reach: 6 * sec, now: 6 * sec, in: input(five, "d:1"), next: -1},
		{name: "unreachable again: a fresh wait", reach: 8 * sec, now: 8 * sec, in: minority, next: 12 * sec},
	})
}

func TestResolverLeaseMajorityIndirect(t *testing.T) {
	five := upMembers(5, nil)
	in := observed(five, "c:1", "a>b", "b>a")
	cfg := Config{Strategy: LeaseMajority, StableAfter: 4 * sec}
	runResolver(t, cfg, []resolverStep{
		{name: "c is responsible (lowest reachable)", reach: sec, now: sec, in: in, next: 5 * sec},
		{name: "acquire", now: 5 * sec, in: in, acquire: true, next: -1},
		{name: "acquired: down the indirectly connected", now: 6 * sec, in: in, lease: 1, want: DownIndirectlyConnected, down: "a:1,b:1"},
	})
	runResolver(t, cfg, []resolverStep{
		{name: "wait", reach: sec, now: sec, in: in, next: 5 * sec},
		{name: "acquire", now: 5 * sec, in: in, acquire: true, next: -1},
		{name: "not acquired: down them and this side", now: 6 * sec, in: in, lease: -1,
			want: ReverseDownIndirectlyConnected, down: "a:1,b:1,c:1,d:1,e:1"},
	})
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{Strategy: 9, StableAfter: sec},
		{},
		{StableAfter: -sec},
		{StableAfter: sec, QuorumSize: -1},
		{StableAfter: sec, Strategy: StaticQuorum},
		{StableAfter: sec, AcquireLeaseDelayForMinority: -1},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v", c, err)
		}
		if _, err := NewResolver(c, time.Time{}); err == nil {
			t.Errorf("%+v: NewResolver accepted it", c)
		}
	}
	if err := (Config{StableAfter: sec}).Validate(); err != nil {
		t.Errorf("minimal config: %v", err)
	}
	for _, s := range []Strategy{KeepMajority, StaticQuorum, KeepOldest, DownAll, LeaseMajority} {
		got, err := ParseStrategy(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStrategy(%q) = %v, %v", s.String(), got, err)
		}
	}
	if s, err := ParseStrategy(""); err != nil || s != KeepMajority {
		t.Errorf("ParseStrategy(\"\") = %v, %v", s, err)
	}
	if _, err := ParseStrategy("keep-referee"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unknown strategy: %v", err)
	}
	if Strategy(7).String() != "Strategy(7)" || Action(9).String() != "Action(9)" || DownEveryone.String() != "down-all" {
		t.Errorf("String of out-of-range values")
	}
}
