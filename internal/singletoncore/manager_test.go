package singletoncore

import (
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
)

// The manager's rules, one table row each: the events before, the event under test,
// the decisions it leads to and the state it ends in. Member i has age 10*i unless
// the row says otherwise, so lower numbers are older; the manager runs on member 2.
func TestManagerTransitions(t *testing.T) {
	cases := []struct {
		name   string
		before []Event
		event  Event
		want   []string
		state  State
	}{
		{
			name:  "waits in Start until its own member is Up",
			event: status(2, 20, member.Joining),
			state: StateStart,
		},
		{
			name:  "the oldest with no older member starts the singleton",
			event: up(2, 20),
			want:  []string{"StartChild"},
			state: StateOldest,
		},
		{
			name:   "a younger member waits",
			before: []Event{up(1, 10)},
			event:  up(2, 20),
			state:  StateYounger,
		},
		{
			name:   "members without the role do not count",
			before: []Event{MemberChanged{Member: Member{Node: node(1), Status: member.Up, UpNumber: 10}}},
			event:  up(2, 20),
			want:   []string{"StartChild"},
			state:  StateOldest,
		},
		{
			name:   "Joining members do not count",
			before: []Event{status(1, 0, member.Joining)},
			event:  up(2, 20),
			want:   []string{"StartChild"},
			state:  StateOldest,
		},
		{
			name:   "an older Exiting member must hand over first",
			before: []Event{status(1, 10, member.Exiting)},
			event:  up(2, 20),
			want:   []string{"n1 <- HandOverToMe", "StartTimer hand-over-retry"},
			state:  StateBecomingOldest,
		},
		{
			name:   "an older Leaving member is still the oldest",
			before: []Event{status(1, 10, member.Leaving)},
			event:  up(2, 20),
			state:  StateYounger,
		},
		{
			name:   "Younger: the oldest leaves and is removed: Oldest at once",
			before: []Event{up(1, 10), up(2, 20)},
			event:  MemberRemoved{Node: node(1)},
			want:   []string{"StartChild"},
			state:  StateOldest,
		},
		{
			name:   "Younger: the oldest is downed: ask it, it may still be alive",
			before: []Event{up(1, 10), up(2, 20)},
			event:  status(1, 10, member.Down),
			want:   []string{"n1 <- HandOverToMe", "StartTimer hand-over-retry"},
			state:  StateBecomingOldest,
		},
		{
			name:   "a downed member's removal counts only after the margin",
			before: []Event{up(1, 10), up(2, 20), status(1, 10, member.Down)},
			event:  MemberRemoved{Node: node(1), Downed: true},
			state:  StateBecomingOldest,
		},
		{
			name:   "the margin passed: Oldest",
			before: []Event{up(1, 10), up(2, 20), status(1, 10, member.Down), MemberRemoved{Node: node(1), Downed: true}},
			event:  RemovalMarginPassed{Node: node(1)},
			want:   []string{"CancelTimer hand-over-retry", "StartChild"},
			state:  StateOldest,
		},
		{
			name:   "Younger: TakeOverFromMe from the oldest makes it claim",
			before: []Event{up(1, 10), up(2, 20)},
			event:  TakeOverFromMe{From: node(1)},
			want:   []string{"n1 <- HandOverToMe", "StartTimer hand-over-retry"},
			state:  StateBecomingOldest,
		},
		{
			name:   "Younger: TakeOverFromMe while an older member still counts: wait",
			before: []Event{up(1, 10), up(3, 5), up(2, 20)},
			event:  TakeOverFromMe{From: node(1)},
			state:  StateYounger,
		},
		{
			name:   "BecomingOldest: HandOverInProgress stops the resends",
			before: []Event{up(1, 10), up(2, 20), TakeOverFromMe{From: node(1)}},
			event:  HandOverInProgress{From: node(1)},
			want:   []string{"CancelTimer hand-over-retry"},
			state:  StateBecomingOldest,
		},
		{
			name:   "BecomingOldest: the retry timer resends",
			before: []Event{up(1, 10), up(2, 20), TakeOverFromMe{From: node(1)}},
			event:  TimerFired{Name: TimerHandOverRetry},
			want:   []string{"n1 <- HandOverToMe"},
			state:  StateBecomingOldest,
		},
		{
			name:   "BecomingOldest: HandOverDone from the previous oldest: Oldest",
			before: []Event{up(1, 10), up(2, 20), TakeOverFromMe{From: node(1)}},
			event:  HandOverDone{From: node(1), Final: true},
			want:   []string{"n1 <- HandOverComplete", "CancelTimer hand-over-retry", "StartChild"},
			state:  StateOldest,
		},
		{
			name:   "BecomingOldest: every older member must hand over, not only the last oldest",
			before: []Event{status(1, 10, member.Exiting), status(3, 15, member.Exiting), up(2, 20)},
			event:  HandOverDone{From: node(3), Final: true},
			want:   []string{"n3 <- HandOverComplete"},
			state:  StateBecomingOldest,
		},
		{
			name:   "BecomingOldest: a younger member that took over asks: pass on and End",
			before: []Event{up(1, 10), up(2, 20), up(3, 30), TakeOverFromMe{From: node(1)}, SelfLeaving{}},
			event:  HandOverToMe{From: node(3)},
			want:   []string{"CancelTimer take-over-retry", "n3 <- HandOverInProgress", "n3 <- HandOverDone(final=false)"},
			state:  StateEnd,
		},
		{
			name:   "Younger: HandOverToMe: certify and End",
			before: []Event{up(1, 10), up(2, 20)},
			event:  HandOverToMe{From: node(3)},
			want:   []string{"n3 <- HandOverDone(final=true)", "n1 <- TakeOverFromMe"},
			state:  StateEnd,
		},
		{
			name:   "Oldest: leaving: ask the next oldest to take over",
			before: []Event{up(2, 20), up(3, 30)},
			event:  SelfLeaving{},
			want:   []string{"n3 <- TakeOverFromMe", "StartTimer take-over-retry"},
			state:  StateWasOldest,
		},
		{
			name:   "Oldest: the last member with the role leaves: stop the singleton",
			before: []Event{up(2, 20)},
			event:  SelfLeaving{},
			want:   []string{"SendTermination"},
			state:  StateHandingOver,
		},
		{
			name:   "Oldest: HandOverToMe: HandingOver",
			before: []Event{up(2, 20), up(3, 30)},
			event:  HandOverToMe{From: node(3)},
			want:   []string{"n3 <- HandOverInProgress", "SendTermination"},
			state:  StateHandingOver,
		},
		{
			name:   "WasOldest: HandOverToMe: HandingOver",
			before: []Event{up(2, 20), up(3, 30), SelfLeaving{}},
			event:  HandOverToMe{From: node(3)},
			want:   []string{"CancelTimer take-over-retry", "n3 <- HandOverInProgress", "SendTermination"},
			state:  StateHandingOver,
		},
		{
			name:   "HandingOver: the singleton terminated: HandOverDone and End",
			before: []Event{up(2, 20), up(3, 30), HandOverToMe{From: node(3)}},
			event:  ChildTerminated{},
			want:   []string{"n3 <- HandOverDone(final=true)"},
			state:  StateEnd,
		},
		{
			name:   "HandingOver: another requester waits and gets the certificate",
			before: []Event{up(2, 20), up(3, 30), up(4, 40), HandOverToMe{From: node(3)}, HandOverToMe{From: node(4)}},
			event:  ChildTerminated{},
			want:   []string{"n3 <- HandOverDone(final=true)", "n4 <- HandOverDone(final=true)"},
			state:  StateEnd,
		},
		{
			name:   "End: certifies to anyone who asks later",
			before: []Event{up(2, 20), up(3, 30), HandOverToMe{From: node(3)}, ChildTerminated{}},
			event:  HandOverToMe{From: node(4)},
			want:   []string{"n4 <- HandOverDone(final=true)"},
			state:  StateEnd,
		},
		{
			name:   "End: waits for its own removal, then stops",
			before: []Event{up(2, 20), up(3, 30), HandOverToMe{From: node(3)}, ChildTerminated{}},
			event:  MemberRemoved{Node: node(2)},
			want:   []string{"StopManager"},
			state:  StateStopping,
		},
		{
			name:   "Oldest: downed: Stopping",
			before: []Event{up(2, 20)},
			event:  SelfDowned{},
			want:   []string{"SendTermination"},
			state:  StateStopping,
		},
		{
			name:   "Oldest: its own member seen Down: Stopping",
			before: []Event{up(2, 20)},
			event:  status(2, 20, member.Down),
			want:   []string{"SendTermination"},
			state:  StateStopping,
		},
		{
			name:   "Stopping: stops once the singleton terminated",
			before: []Event{up(2, 20), SelfDowned{}},
			event:  ChildTerminated{},
			want:   []string{"StopManager"},
			state:  StateStopping,
		},
		{
			name:   "Younger: downed: stops at once",
			before: []Event{up(1, 10), up(2, 20)},
			event:  SelfDowned{},
			want:   []string{"StopManager"},
			state:  StateStopping,
		},
		{
			name:   "Oldest: the singleton stops by itself: not restarted",
			before: []Event{up(2, 20)},
			event:  ChildTerminated{},
			state:  StateOldest,
		},
		{
			name:   "Younger, leaving: tells every candidate not to count it",
			before: []Event{up(1, 10), up(2, 20), up(3, 30), MemberChanged{Member: Member{Node: node(4), Status: member.Up, UpNumber: 40}}},
			event:  SelfLeaving{},
			want:   []string{"n1 <- TakeOverFromMe", "n3 <- TakeOverFromMe"},
			state:  StateYounger,
		},
		{
			name:   "Oldest: TakeOverFromMe from a younger member: collect what it holds",
			before: []Event{up(2, 20), up(3, 30)},
			event:  TakeOverFromMe{From: node(3)},
			want:   []string{"n3 <- HandOverToMe"},
			state:  StateOldest,
		},
		{
			name:   "late messages from removed members are ignored",
			before: []Event{up(2, 20), up(3, 30), MemberRemoved{Node: node(3)}},
			event:  TakeOverFromMe{From: node(3)},
			state:  StateOldest,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, 2, nil)
			feed(m, c.before...)
			wantDecisions(t, feed(m, c.event), c.want...)
			wantState(t, m, c.state)
		})
	}
}

func TestManagerRetryLimits(t *testing.T) {
	for _, c := range []struct {
		min      int
		interval time.Duration
		margin   time.Duration
		want     int
	}{
		{15, time.Second, 0, 15},
		{15, time.Second, 20 * time.Second, 23},
		{15, 2 * time.Second, 20 * time.Second, 15},
		{3, time.Second, 5 * time.Second, 8},
	} {
		m, err := NewManagerCore(node(2), ManagerConfig{MinHandOverRetries: c.min, HandOverRetryInterval: c.interval}, c.margin)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.RetryLimit(); got != c.want {
			t.Errorf("min %d, interval %v, margin %v: limit %d, want %d", c.min, c.interval, c.margin, got, c.want)
		}
	}
}

// Past the retry limit a manager becoming the oldest raises one alert and keeps
// waiting: it never starts the singleton while an older member may run it.
func TestManagerBecomingOldestPastLimit(t *testing.T) {
	m := newManager(t, 2, func(c *ManagerConfig) { c.MinHandOverRetries = 3 })
	feed(m, up(1, 10), up(2, 20), status(1, 10, member.Down))
	var alerts int
	for i := 0; i < 10; i++ {
		for _, d := range feed(m, TimerFired{Name: TimerHandOverRetry}) {
			if d == "Alert" {
				alerts++
			}
		}
	}
	if alerts != 1 {
		t.Fatalf("%d alerts, want 1", alerts)
	}
	wantState(t, m, StateBecomingOldest)
	wantDecisions(t, feed(m, MemberRemoved{Node: node(1), Downed: true}))
	wantDecisions(t, feed(m, RemovalMarginPassed{Node: node(1)}), "CancelTimer hand-over-retry", "StartChild")
}

// A leaving host asks max(1, limit-3) times, then reports it and stops the singleton;
// whoever asks later gets what it held.
func TestManagerWasOldestGivesUp(t *testing.T) {
	m := newManager(t, 2, func(c *ManagerConfig) { c.MinHandOverRetries = 5 }) // limit 5: 2 retries
	feed(m, up(2, 20), up(3, 30), SelfLeaving{})
	wantDecisions(t, feed(m, TimerFired{Name: TimerTakeOverRetry}), "n3 <- TakeOverFromMe")
	wantDecisions(t, feed(m, TimerFired{Name: TimerTakeOverRetry}), "n3 <- TakeOverFromMe")
	wantDecisions(t, feed(m, TimerFired{Name: TimerTakeOverRetry}), "Alert", "CancelTimer take-over-retry", "SendTermination")
	wantDecisions(t, feed(m, ChildTerminated{}))
	wantState(t, m, StateEnd)
	wantDecisions(t, feed(m, HandOverToMe{From: node(3)}), "n3 <- HandOverDone(final=true)")
}

// Cancelled timers may still fire once: the manager ignores them.
func TestManagerIgnoresStaleTimers(t *testing.T) {
	m := newManager(t, 2, nil)
	feed(m, up(1, 10), up(2, 20), TakeOverFromMe{From: node(1)}, HandOverDone{From: node(1), Final: true})
	wantState(t, m, StateOldest)
	wantDecisions(t, feed(m, TimerFired{Name: TimerHandOverRetry}))
	wantDecisions(t, feed(m, TimerFired{Name: TimerTakeOverRetry}))
	wantDecisions(t, feed(m, TimerFired{Name: "unknown"}))
}

func TestManagerLease(t *testing.T) {
	m := newManager(t, 2, func(c *ManagerConfig) { c.UseLease = true })
	wantDecisions(t, feed(m, up(2, 20)), "AcquireLease")
	if m.Status().ChildRunning {
		t.Fatal("runs without the lease")
	}
	wantDecisions(t, feed(m, LeaseFailed{}), "StartTimer lease-retry")
	wantDecisions(t, feed(m, TimerFired{Name: TimerLeaseRetry}), "AcquireLease")
	wantDecisions(t, feed(m, TimerFired{Name: TimerLeaseRetry})) // one attempt at a time
	wantDecisions(t, feed(m, LeaseAcquired{}), "CancelTimer lease-retry", "StartChild")

	// Losing it stops the singleton, which restarts once the lease is held again.
	wantDecisions(t, feed(m, LeaseLost{}), "SendTermination")
	wantDecisions(t, feed(m, Envelope(env(5, 1, 0, 0))))
	wantDecisions(t, feed(m, ChildTerminated{}), "AcquireLease")
	wantDecisions(t, feed(m, LeaseAcquired{}), "StartChild", "Deliver 5:1")

	// A hand-over releases the lease before it certifies.
	feed(m, up(3, 30))
	wantDecisions(t, feed(m, HandOverToMe{From: node(3)}), "n3 <- HandOverInProgress", "SendTermination")
	wantDecisions(t, feed(m, ChildTerminated{}), "ReleaseLease", "n3 <- HandOverDone(final=true next p5=2)")
	// A late acquisition is given back.
	wantDecisions(t, feed(m, LeaseAcquired{}), "ReleaseLease")
}

// Proxies identify the host; a host delivers their messages in each proxy's order,
// holds them while its singleton does not run, and tells its clients when it departs.
func TestManagerProxyTraffic(t *testing.T) {
	m := newManager(t, 2, nil)
	feed(m, up(1, 10), up(2, 20), up(3, 30))

	// Not the host: the proxy waits for an answer.
	wantDecisions(t, feed(m, Identify{Proxy: proxyOn(5)}))
	feed(m, TakeOverFromMe{From: node(1)})
	wantDecisions(t, feed(m, HandOverDone{From: node(1), Final: true, Next: []ProxyNext{{Proxy: proxyOn(6), Next: 4}},
		Ordered: []Envelope{env(6, 4, 0, 0)}, Held: []Envelope{env(6, 6, 5, 1)}}),
		"n1 <- HandOverComplete", "StartTimer order-wait", "CancelTimer hand-over-retry", "StartChild", "Deliver 6:4", "p5 <- Accepting")
	// 6:6 waits for 6:5, which the previous host forwards.
	wantDecisions(t, feed(m, env(6, 5, 0, 0)), "Deliver 6:5", "Deliver 6:6", "CancelTimer order-wait")

	// A proxy that turned to this host after sending to node 1 is held back until
	// node 1's messages are in.
	wantDecisions(t, feed(m, env(7, 3, 2, 1)), "StartTimer order-wait")
	wantDecisions(t, feed(m, Relay{From: node(1), Ordered: []Envelope{env(7, 1, 0, 0), env(7, 2, 0, 0)}}),
		"Deliver 7:1", "Deliver 7:2", "Deliver 7:3", "CancelTimer order-wait")

	wantDecisions(t, feed(m, Identify{Proxy: proxyOn(8)}), "p8 <- Accepting")
	wantDecisions(t, feed(m, HandOverToMe{From: node(3)}), "n3 <- HandOverInProgress", "SendTermination")
	// While handing over, messages are kept for the successor.
	wantDecisions(t, feed(m, env(5, 1, 0, 0)))
	wantDecisions(t, feed(m, ChildTerminated{}),
		"n3 <- HandOverDone(final=false next p5=2 next p6=7 next p7=4 ordered 5:1)",
		"p5 <- Departed", "p8 <- Departed")
	// In End: forward what still comes, answer proxies, and tell the successor when
	// nothing more will come.
	wantDecisions(t, feed(m, env(5, 2, 0, 0)), "n3 <- Envelope 5:2")
	wantDecisions(t, feed(m, Identify{Proxy: proxyOn(9)}), "p9 <- Departed")
	wantDecisions(t, feed(m, SelfLeaving{}))
	wantDecisions(t, feed(m, Detach{Proxy: proxyOn(5)}))
	if m.Status().Finished {
		t.Fatal("finished with a client attached")
	}
	wantDecisions(t, feed(m, Detach{Proxy: proxyOn(8)}), "n3 <- Relay(final=true next=0 ordered=0 held=0)")
	if m.Status().Finished {
		t.Fatal("finished before the successor confirmed")
	}
	feed(m, HandOverComplete{From: node(3)})
	if !m.Status().Finished {
		t.Fatalf("not finished: %+v", m.Status())
	}
}

// A client on a member that left and was removed is forgotten: its proxy stops after
// its member left, and its Detach can no longer arrive; a leaving host does not wait
// for it. A client on a downed member is forgotten once the margin has passed.
func TestManagerForgetsClientsOfRemovedMembers(t *testing.T) {
	m := newManager(t, 2, nil)
	feed(m, up(2, 20), up(3, 30), up(4, 40))
	wantDecisions(t, feed(m, Identify{Proxy: proxyOn(3)}), "p3 <- Accepting")
	wantDecisions(t, feed(m, Identify{Proxy: proxyOn(4)}), "p4 <- Accepting")
	feed(m, SelfLeaving{}, HandOverToMe{From: node(3)}, ChildTerminated{}, HandOverComplete{From: node(3)})
	wantState(t, m, StateEnd)
	feed(m, Detach{Proxy: proxyOn(3)})
	feed(m, status(4, 40, member.Down), MemberRemoved{Node: node(4), Downed: true})
	if m.Status().Finished {
		t.Fatal("finished before the downed member's margin passed")
	}
	wantDecisions(t, feed(m, RemovalMarginPassed{Node: node(4)}), "n3 <- Relay(final=true next=0 ordered=0 held=0)")
	feed(m, HandOverComplete{From: node(3)})
	if !m.Status().Finished {
		t.Fatalf("not finished: %+v", m.Status())
	}

	m = newManager(t, 2, nil)
	feed(m, up(2, 20), up(3, 30), up(4, 40), Identify{Proxy: proxyOn(4)})
	feed(m, SelfLeaving{}, HandOverToMe{From: node(3)}, ChildTerminated{}, HandOverComplete{From: node(3)})
	wantDecisions(t, feed(m, status(4, 40, member.Exiting), MemberRemoved{Node: node(4)}),
		"n3 <- Relay(final=true next=0 ordered=0 held=0)")
	feed(m, HandOverComplete{From: node(3)})
	if !m.Status().Finished {
		t.Fatalf("not finished after the client's member left: %+v", m.Status())
	}
}

// When the previous host was downed, a proxy's held messages wait for the margin, not
// for ever.
func TestManagerReleasesAfterDownedHost(t *testing.T) {
	m := newManager(t, 2, nil)
	feed(m, up(1, 10), up(3, 5), up(2, 20), status(3, 5, member.Down), MemberRemoved{Node: node(3), Downed: true})
	// Node 3 still blocks, but it is removed: nothing is sent to it.
	wantDecisions(t, feed(m, MemberRemoved{Node: node(1)}), "StartTimer hand-over-retry")
	wantState(t, m, StateBecomingOldest)
	feed(m, RemovalMarginPassed{Node: node(3)})
	wantState(t, m, StateOldest)
	wantDecisions(t, feed(m, env(5, 9, 8, 3)), "Deliver 5:9")
}

// Messages a host holds are bounded by Config.BufferSize: the oldest are dropped.
func TestManagerBufferLimit(t *testing.T) {
	m := newManager(t, 2, func(c *ManagerConfig) { c.BufferSize = 2; c.UseLease = true })
	feed(m, up(2, 20)) // Oldest, waiting for the lease
	wantDecisions(t, feed(m, env(5, 1, 0, 0), env(5, 2, 0, 0)))
	wantDecisions(t, feed(m, env(5, 3, 0, 0)), "Dropped 5:1")
	wantDecisions(t, feed(m, LeaseAcquired{}), "StartChild", "Deliver 5:2", "Deliver 5:3")
}

// A downed member drops what it holds, visibly.
func TestManagerDropsWhenDowned(t *testing.T) {
	m := newManager(t, 2, nil)
	feed(m, up(2, 20), SelfDowned{})
	wantDecisions(t, feed(m, env(5, 1, 0, 0)), "Dropped 5:1")
	feed(m, ChildTerminated{})
	wantDecisions(t, feed(m, env(5, 2, 0, 0)), "Dropped 5:2")
	if !m.Status().Finished {
		t.Fatal("a stopped manager is finished")
	}
}

func TestManagerStatus(t *testing.T) {
	m := newManager(t, 2, nil)
	ds := m.Handle(up(2, 20))
	var got []Status
	for _, d := range ds {
		if s, ok := d.(StateChanged); ok {
			got = append(got, s.Status)
		}
	}
	want := Status{State: StateOldest, Oldest: node(2), ChildRunning: true}
	if len(got) != 1 || got[0] != want || m.Status() != want {
		t.Fatalf("reported %+v, status %+v; want %+v", got, m.Status(), want)
	}
	if ds := m.Handle(Identify{Proxy: proxyOn(5)}); len(ds) != 1 {
		t.Fatalf("a change of nothing reported: %v", show(ds))
	}
}

func TestNewManagerCoreRejects(t *testing.T) {
	if _, err := NewManagerCore(node(1), ManagerConfig{BufferSize: -1}, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative buffer: %v", err)
	}
	if _, err := NewManagerCore(member.UniqueAddress{Addr: "a:1"}, testConfig(), 0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no uid: %v", err)
	}
	if _, err := NewManagerCore(node(1), testConfig(), -time.Second); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative margin: %v", err)
	}
}
