package discovery

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// dnsServer is a DNS server on a loopback UDP port for the tests: it answers from its
// records, NXDOMAIN for names it has none for, and SERVFAIL while failing is set. It
// can be stopped and started again on the same address.
type dnsServer struct {
	t    *testing.T
	addr string

	mu      sync.Mutex
	records map[string][]dns.RR // by lower-case owner name
	failing bool
	srv     *dns.Server
	queries []string // "name type", in order
}

// startDNS starts a server with the records, given in zone-file syntax.
func startDNS(t *testing.T, records ...string) *dnsServer {
	t.Helper()
	s := &dnsServer{t: t, addr: "127.0.0.1:0", records: map[string][]dns.RR{}}
	for _, r := range records {
		s.add(r)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *dnsServer) add(record string) {
	s.t.Helper()
	rr, err := dns.NewRR(record)
	if err != nil {
		s.t.Fatalf("record %q: %v", record, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name := strings.ToLower(rr.Header().Name)
	s.records[name] = append(s.records[name], rr)
}

func (s *dnsServer) setFailing(f bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = f
}

func (s *dnsServer) start() {
	s.t.Helper()
	pc, err := net.ListenPacket("udp", s.addr)
	if err != nil {
		s.t.Fatalf("dns server: %v", err)
	}
	s.addr = pc.LocalAddr().String()
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve), NotifyStartedFunc: func() { close(started) }}
	done := make(chan error, 1)
	go func() { done <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-done:
		s.t.Fatalf("dns server: %v", err)
	}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

// stop stops the server; its port answers nothing until start.
func (s *dnsServer) stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		if err := srv.Shutdown(); err != nil {
			s.t.Errorf("dns server shutdown: %v", err)
		}
	}
}

func (s *dnsServer) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	s.mu.Lock()
	for _, q := range req.Question {
		s.queries = append(s.queries, q.Name+" "+dns.TypeToString[q.Qtype])
	}
	switch {
	case s.failing:
		m.Rcode = dns.RcodeServerFailure
	case len(req.Question) != 1:
		m.Rcode = dns.RcodeFormatError
	default:
		q := req.Question[0]
		rrs, ok := s.records[strings.ToLower(q.Name)]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
			}
		}
	}
	s.mu.Unlock()
	_ = w.WriteMsg(m)
}
