package discovery

import (
	"context"
	"errors"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func lookupCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The records every DNS test serves: a service with A and AAAA records, and SRV
// records for its gossip port.
var testZone = []string{
	"nodes.test. 5 IN A 10.0.0.2",
	"nodes.test. 5 IN A 10.0.0.1",
	"nodes.test. 5 IN AAAA fd00::1",
	"nodes.test. 5 IN A 10.0.0.1",
	"_gossip._tcp.nodes.test. 5 IN SRV 0 0 7946 a.nodes.test.",
	"_gossip._tcp.nodes.test. 5 IN SRV 0 0 7947 b.nodes.test.",
	"_gossip._tcp.nodes.test. 5 IN SRV 1 0 7946 a.nodes.test.",
	"_gossip._tcp.nodes.test. 5 IN SRV 0 0 7946 gone.nodes.test.",
	"_gossip._tcp.nodes.test. 5 IN SRV 0 0 7946 .",
	"a.nodes.test. 5 IN A 10.0.1.1",
	"a.nodes.test. 5 IN AAAA fd00::11",
	"b.nodes.test. 5 IN A 10.0.1.2",
	"_gossip._tcp.dangling.test. 5 IN SRV 0 0 7946 gone.nodes.test.",
	"_gossip._tcp.none.test. 5 IN SRV 0 0 7946 .",
	"text.test. 5 IN TXT \"no address here\"",
}

func TestDNSAddressRecordsWithConfiguredPort(t *testing.T) {
	s := startDNS(t, testZone...)
	d := DNS{Server: s.addr, Port: 7946}
	got, err := d.Lookup(lookupCtx(t), Lookup{Service: "nodes.test."})
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{"10.0.0.1", 7946}, {"10.0.0.2", 7946}, {"fd00::1", 7946}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Without a port, and with only one of PortName and Protocol: address records.
	got, err = DNS{Server: s.addr}.Lookup(lookupCtx(t), Lookup{Service: "nodes.test.", PortName: "gossip"})
	if err != nil {
		t.Fatal(err)
	}
	want = []Target{{"10.0.0.1", 0}, {"10.0.0.2", 0}, {"fd00::1", 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("without a port: got %v, want %v", got, want)
	}
}

func TestDNSServiceRecords(t *testing.T) {
	s := startDNS(t, testZone...)
	d := DNS{Server: s.addr, Port: 1} // Port is not used for SRV
	got, err := d.Lookup(lookupCtx(t), Lookup{Service: "nodes.test.", PortName: "gossip", Protocol: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	// a's two records (one a duplicate) give its A and AAAA addresses once; gone does
	// not resolve and "." is no target: both are left out.
	want := []Target{{"10.0.1.1", 7946}, {"10.0.1.2", 7947}, {"fd00::11", 7946}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.queries, "_gossip._tcp.nodes.test. SRV") {
		t.Fatalf("no SRV query among %v", s.queries)
	}
}

func TestDNSNotFound(t *testing.T) {
	s := startDNS(t, testZone...)
	d := DNS{Server: s.addr, Port: 7946}
	cases := []struct {
		name string
		l    Lookup
	}{
		{"NXDOMAIN", Lookup{Service: "missing.test."}},
		{"no address record", Lookup{Service: "text.test."}},
		{"SRV NXDOMAIN", Lookup{Service: "missing.test.", PortName: "gossip", Protocol: "tcp"}},
		{"no SRV record", Lookup{Service: "text.test.", PortName: "gossip", Protocol: "tcp"}},
		{"SRV target does not exist", Lookup{Service: "dangling.test.", PortName: "gossip", Protocol: "tcp"}},
		{"SRV target is .", Lookup{Service: "none.test.", PortName: "gossip", Protocol: "tcp"}},
	}
	for _, c := range cases {
		ts, err := d.Lookup(lookupCtx(t), c.l)
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, %v; want ErrNotFound", c.name, ts, err)
		}
	}
	if _, err := d.Lookup(lookupCtx(t), Lookup{}); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("empty service: %v; want an error other than ErrNotFound", err)
	}
}

// A failing server is an error that is not ErrNotFound, and the next lookup after it
// recovers succeeds.
func TestDNSServerFailureAndRecovery(t *testing.T) {
	s := startDNS(t, testZone...)
	d := DNS{Server: s.addr, Port: 7946}
	srv := Lookup{Service: "nodes.test.", PortName: "gossip", Protocol: "tcp"}
	addr := Lookup{Service: "nodes.test."}

	s.setFailing(true)
	for _, l := range []Lookup{addr, srv} {
		_, err := d.Lookup(lookupCtx(t), l)
		var de *net.DNSError
		if err == nil || errors.Is(err, ErrNotFound) || !errors.As(err, &de) {
			t.Fatalf("SERVFAIL, %+v: %v; want a *net.DNSError that is not ErrNotFound", l, err)
		}
	}

	s.setFailing(false)
	for _, l := range []Lookup{addr, srv} {
		if ts, err := d.Lookup(lookupCtx(t), l); err != nil || len(ts) != 3 {
			t.Fatalf("after recovery, %+v: %v, %v", l, ts, err)
		}
	}
}

func TestDNSServerStoppedAndRestarted(t *testing.T) {
	s := startDNS(t, testZone...)
	d := DNS{Server: s.addr, Port: 7946}
	l := Lookup{Service: "nodes.test."}

	s.stop()
	_, err := d.Lookup(lookupCtx(t), l)
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("server stopped: %v; want an error other than ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "discovery: dns") {
		t.Fatalf("error %q does not say it is discovery's", err)
	}

	s.start() // the same address
	if ts, err := d.Lookup(lookupCtx(t), l); err != nil || len(ts) != 3 {
		t.Fatalf("after restart: %v, %v", ts, err)
	}
}

func TestDNSEndsWithContext(t *testing.T) {
	s := startDNS(t, testZone...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := DNS{Server: s.addr}.Lookup(ctx, Lookup{Service: "nodes.test."})
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("cancelled: %v; want an error other than ErrNotFound", err)
	}
}
