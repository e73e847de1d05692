package singletoncore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/member"
)

func newProxy(t *testing.T, cfg ProxyConfig) *ProxyCore {
	t.Helper()
	if cfg.Role == "" {
		cfg.Role = "r"
	}
	p, err := NewProxyCore(proxyOn(9), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func feedProxy(p *ProxyCore, evs ...Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, show(p.Handle(ev))...)
	}
	return out
}

func send(n int) Event {
	return Send{Payload: Payload{Manifest: "m", Data: fmt.Appendf(nil, "u%d", n)}}
}

// sentEnvelopes returns the envelopes the proxy sent in ds, as "n<to> seq/after/prev".
func sentEnvelopes(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		if s, ok := d.(SendToManager); ok {
			if b, ok := s.Message.(Batch); ok {
				for i := range b.Payloads {
					e := b.Envelope(i)
					prev := "-"
					if e.Prev != (member.UniqueAddress{}) {
						prev = nodeName(e.Prev)
					}
					out = append(out, fmt.Sprintf("%s %s %d/%d/%s", nodeName(s.To), e.Payload.Data, e.Seq, e.After, prev))
				}
			}
		}
	}
	return out
}

func TestProxyRouting(t *testing.T) {
	cases := []struct {
		name   string
		events []Event
		target member.UniqueAddress
	}{
		{"no member", nil, member.UniqueAddress{}},
		{"the oldest with the role", []Event{up(2, 20), up(1, 10), up(3, 30)}, node(1)},
		{"members without the role are skipped", []Event{
			MemberChanged{Member: Member{Node: node(1), Status: member.Up, UpNumber: 10}}, up(2, 20)}, node(2)},
		{"Joining members are skipped", []Event{status(1, 0, member.Joining), up(2, 20)}, node(2)},
		{"a Leaving member still counts", []Event{status(1, 10, member.Leaving), up(2, 20)}, node(1)},
		{"an Exiting member is dropped", []Event{up(1, 10), up(2, 20), status(1, 10, member.Exiting)}, node(2)},
		{"a Down member is dropped", []Event{up(1, 10), up(2, 20), status(1, 10, member.Down)}, node(2)},
		{"a removed member is dropped for good", []Event{up(1, 10), up(2, 20), MemberRemoved{Node: node(1)}, up(1, 10)}, node(2)},
		{"a departed manager is skipped", []Event{up(1, 10), up(2, 20), IdentifyAck{From: node(1), Departed: true}}, node(2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProxy(t, ProxyConfig{})
			feedProxy(p, c.events...)
			if got := p.Status().Target; got != c.target {
				t.Fatalf("target %v, want %v", got, c.target)
			}
		})
	}
}

func TestProxyIdentifiesAndBuffers(t *testing.T) {
	p := newProxy(t, ProxyConfig{})
	wantDecisions(t, feedProxy(p, send(1)))
	wantDecisions(t, feedProxy(p, up(1, 10)), "n1 <- Identify", "StartTimer identify")
	wantDecisions(t, feedProxy(p, send(2)))
	wantDecisions(t, feedProxy(p, TimerFired{Name: TimerIdentify}), "n1 <- Identify")
	wantDecisions(t, feedProxy(p, IdentifyAck{From: node(1)})) // not hosting yet
	if st := p.Status(); st.Identified || st.Buffered != 2 {
		t.Fatalf("status %+v", st)
	}
	ds := p.Handle(IdentifyAck{From: node(1), Accepting: true})
	wantDecisions(t, show(ds), "CancelTimer identify", "n1 <- Batch u1 u2")
	wantDecisions(t, sentEnvelopes(ds), "n1 u1 1/0/-", "n1 u2 2/0/-")
	wantDecisions(t, sentEnvelopes(p.Handle(send(3))), "n1 u3 3/0/-")
	wantDecisions(t, feedProxy(p, TimerFired{Name: TimerIdentify})) // cancelled
}

// When the host changes, the proxy detaches from the old one and numbers on: the
// first epoch at the new host says where the earlier messages went.
func TestProxyMovesToTheNewHost(t *testing.T) {
	p := newProxy(t, ProxyConfig{})
	feedProxy(p, up(1, 10), up(2, 20), IdentifyAck{From: node(1), Accepting: true}, send(1), send(2))
	wantDecisions(t, feedProxy(p, IdentifyAck{From: node(1), Departed: true}),
		"n1 <- Detach", "n2 <- Identify", "StartTimer identify")
	wantDecisions(t, feedProxy(p, send(3)))
	ds := p.Handle(IdentifyAck{From: node(2), Accepting: true})
	wantDecisions(t, sentEnvelopes(ds), "n2 u3 3/2/n1")
	wantDecisions(t, sentEnvelopes(p.Handle(send(4))), "n2 u4 4/2/n1")
	// A late answer from a manager it turned away from: detach from it.
	wantDecisions(t, feedProxy(p, IdentifyAck{From: node(1), Accepting: true}), "n1 <- Detach")
	// The new host goes too; nobody is left.
	wantDecisions(t, feedProxy(p, MemberRemoved{Node: node(2)}), "n2 <- Detach")
	if st := p.Status(); st.Target != (member.UniqueAddress{}) || st.Identified {
		t.Fatalf("status %+v", st)
	}
	wantDecisions(t, feedProxy(p, up(3, 30)), "n3 <- Identify", "StartTimer identify")
	wantDecisions(t, sentEnvelopes(p.Handle(IdentifyAck{From: node(3), Accepting: true})))
	wantDecisions(t, sentEnvelopes(p.Handle(send(5))), "n3 u5 5/4/n2")
}

// The buffer keeps the newest messages: the oldest is dropped when it is full.
func TestProxyBufferDropsOldest(t *testing.T) {
	p := newProxy(t, ProxyConfig{BufferSize: 3})
	for i := 1; i <= 3; i++ {
		wantDecisions(t, feedProxy(p, send(i)))
	}
	wantDecisions(t, feedProxy(p, send(4)), "Dropped u1")
	wantDecisions(t, feedProxy(p, send(5)), "Dropped u2")
	if st := p.Status(); st.Buffered != 3 || st.Dropped != 2 {
		t.Fatalf("status %+v", st)
	}
	feedProxy(p, up(1, 10))
	wantDecisions(t, sentEnvelopes(p.Handle(IdentifyAck{From: node(1), Accepting: true})),
		"n1 u3 1/0/-", "n1 u4 2/0/-", "n1 u5 3/0/-")
	// The ring wraps around correctly after a flush.
	feedProxy(p, IdentifyAck{From: node(1), Departed: true})
	for i := 6; i <= 10; i++ {
		feedProxy(p, send(i))
	}
	feedProxy(p, up(2, 20))
	wantDecisions(t, sentEnvelopes(p.Handle(IdentifyAck{From: node(2), Accepting: true})),
		"n2 u8 4/3/n1", "n2 u9 5/3/n1", "n2 u10 6/3/n1")
}

func TestProxyWithoutBuffer(t *testing.T) {
	p := newProxy(t, ProxyConfig{BufferSize: -1})
	wantDecisions(t, feedProxy(p, send(1)), "Dropped u1")
	feedProxy(p, up(1, 10), IdentifyAck{From: node(1), Accepting: true})
	wantDecisions(t, sentEnvelopes(p.Handle(send(2))), "n1 u2 1/0/-")
}

func TestProxyStopping(t *testing.T) {
	p := newProxy(t, ProxyConfig{})
	feedProxy(p, up(1, 10), send(1))
	// Its Identify may have made the manager count it as a client: detach.
	wantDecisions(t, feedProxy(p, ProxyStopping{}), "n1 <- Detach", "CancelTimer identify", "Dropped u1")
	wantDecisions(t, feedProxy(p, send(2)), "Dropped u2")
	wantDecisions(t, feedProxy(p, IdentifyAck{From: node(1), Accepting: true}), "n1 <- Detach")
	wantDecisions(t, feedProxy(p, up(2, 5)))
}

func TestNewProxyCoreRejects(t *testing.T) {
	if _, err := NewProxyCore(ProxyID{Node: node(1)}, ProxyConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no path: %v", err)
	}
	if _, err := NewProxyCore(proxyOn(1), ProxyConfig{BufferSize: MaxProxyBufferSize + 1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("buffer too large: %v", err)
	}
}
