package singletoncore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/member"
)

// node returns the unique address of test member i ("n<i>" in decisions).
func node(i int) member.UniqueAddress {
	return member.UniqueAddress{Addr: fmt.Sprintf("10.0.0.%d:2552", i), UID: uint64(100 + i)}
}

// proxyOn returns the id of the test proxy on member i ("p<i>" in decisions).
func proxyOn(i int) ProxyID { return ProxyID{Node: node(i), Path: fmt.Sprintf("/user/proxy#%d", i)} }

// up says member i is Up with age up (lower is older) and the role "r".
func up(i int, age int64) Event {
	return MemberChanged{Member: Member{Node: node(i), Status: member.Up, UpNumber: age, Roles: []string{"r"}}}
}

// status says member i (age up, role "r") has status st.
func status(i int, age int64, st member.MemberStatus) Event {
	return MemberChanged{Member: Member{Node: node(i), Status: st, UpNumber: age, Roles: []string{"r"}}}
}

// env returns proxy i's message seq, in the epoch after after (sent to prev before).
func env(i int, seq, after uint64, prev int) Envelope {
	e := Envelope{Proxy: proxyOn(i), Seq: seq, After: after,
		Payload: Payload{Manifest: "m", Data: fmt.Appendf(nil, "%d:%d", i, seq)}}
	if prev > 0 {
		e.Prev = node(prev)
	}
	return e
}

func testConfig() ManagerConfig {
	return ManagerConfig{Role: "r"}
}

// newManager returns the manager core of member self, with margin 0 (retry limit 15).
func newManager(t *testing.T, self int, mod func(*ManagerConfig)) *ManagerCore {
	t.Helper()
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewManagerCore(node(self), cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// feed hands the events to the manager and returns its decisions, shown.
func feed(m *ManagerCore, evs ...Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, show(m.Handle(ev))...)
	}
	return out
}

// show writes decisions compactly, leaving out StateChanged and ProxyStateChanged.
func show(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		switch d := d.(type) {
		case StartChild:
			out = append(out, "StartChild")
		case SendTermination:
			out = append(out, "SendTermination")
		case Deliver:
			out = append(out, "Deliver "+string(d.Envelope.Payload.Data))
		case DeliverBatch:
			out = append(out, "DeliverBatch "+showPayloads(d.Batch.Payloads))
		case SendToManager:
			out = append(out, nodeName(d.To)+" <- "+showMessage(d.Message))
		case SendToProxy:
			out = append(out, "p"+strings.TrimPrefix(d.To.Path, "/user/proxy#")+" <- "+showMessage(d.Message))
		case StartTimer:
			out = append(out, "StartTimer "+d.Name)
		case CancelTimer:
			out = append(out, "CancelTimer "+d.Name)
		case StopManager:
			out = append(out, "StopManager")
		case AcquireLease:
			out = append(out, "AcquireLease")
		case ReleaseLease:
			out = append(out, "ReleaseLease")
		case Alert:
			out = append(out, "Alert")
		case Dropped:
			out = append(out, "Dropped "+string(d.Payload.Data))
		case StateChanged, ProxyStateChanged:
		default:
			out = append(out, fmt.Sprintf("%T", d))
		}
	}
	return out
}

func nodeName(u member.UniqueAddress) string {
	return "n" + strings.TrimSuffix(strings.TrimPrefix(u.Addr, "10.0.0."), ":2552")
}

func showMessage(msg any) string {
	switch m := msg.(type) {
	case HandOverDone:
		var b strings.Builder
		fmt.Fprintf(&b, "HandOverDone(final=%v", m.Final)
		for _, r := range m.Next {
			fmt.Fprintf(&b, " next p%s=%d", strings.TrimPrefix(r.Proxy.Path, "/user/proxy#"), r.Next)
		}
		for _, e := range m.Ordered {
			fmt.Fprintf(&b, " ordered %s", e.Payload.Data)
		}
		for _, e := range m.Held {
			fmt.Fprintf(&b, " held %s", e.Payload.Data)
		}
		return b.String() + ")"
	case Relay:
		return fmt.Sprintf("Relay(final=%v next=%d ordered=%d held=%d)", m.Final, len(m.Next), len(m.Ordered), len(m.Held))
	case IdentifyAck:
		switch {
		case m.Accepting:
			return "Accepting"
		case m.Departed:
			return "Departed"
		}
		return "IdentifyAck"
	case Envelope:
		return "Envelope " + string(m.Payload.Data)
	case Batch:
		return "Batch " + showPayloads(m.Payloads)
	case Identify:
		return "Identify"
	case Detach:
		return "Detach"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "singletoncore.")
}

// showPayloads writes the payloads' data, separated by spaces.
func showPayloads(ps []Payload) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.Write(p.Data)
	}
	return b.String()
}

// wantDecisions fails the test unless got equals want.
func wantDecisions(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("decisions:\n  got  %q\n  want %q", got, want)
	}
}

// wantState fails the test unless the manager is in state s.
func wantState(t *testing.T, m *ManagerCore, s State) {
	t.Helper()
	if got := m.Status().State; got != s {
		t.Fatalf("state %v, want %v", got, s)
	}
}
