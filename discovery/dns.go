package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// DNS looks services up in DNS with the standard library's resolver.
//
// With Lookup.PortName and Lookup.Protocol both set it asks for the SRV records
// _PortName._Protocol.Service and takes each record's port; it then resolves each
// record's target name to its A and AAAA addresses, so a Target's Host is always an IP
// address (Akka reads the same addresses from the answer's additional records; the
// standard resolver does not expose those, so this costs one more query per target
// name). A target name that does not resolve is left out; if none resolves, the lookup
// fails (with ErrNotFound, wrapped, when a target name does not exist). A record whose target is "." (the service is decidedly not available) is
// skipped.
//
// Without them it asks for the A and AAAA records of Service and gives each address
// Port.
//
// With Kubernetes, look the headless Service up (clusterIP: None, with
// publishNotReadyAddresses: true so that pods not yet ready are listed during
// bootstrap): Service "name.namespace.svc.cluster.local", and the named container port
// as PortName with Protocol "tcp".
type DNS struct {
	// Server, when set, is the DNS server to ask ("host:port", e.g. "10.96.0.10:53");
	// by default the system's resolver configuration (/etc/resolv.conf) is used. The
	// search domains of the system configuration apply in both cases; end Service
	// with a dot to ask for the name as it is.
	Server string
	// Port is given to the targets of A and AAAA records; 0 (the default) gives
	// targets without a port.
	Port int
}

// Lookup resolves l as the type's comment says. The answer is sorted and without
// duplicates. A name that does not exist (NXDOMAIN) or has no record of the type asked
// gives ErrNotFound (wrapped with the resolver's error); any other failure (SERVFAIL, a
// timeout, an unreachable server) is returned as the resolver's error, a
// *net.DNSError.
func (d DNS) Lookup(ctx context.Context, l Lookup) ([]Target, error) {
	if l.Service == "" {
		return nil, errors.New("discovery: dns: Lookup.Service is empty")
	}
	// The resolver may still answer after ctx has ended (from a lookup it shares with
	// another caller): a lookup under an ended context fails, always.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("discovery: dns: %w", err)
	}
	r := d.resolver()
	if l.PortName != "" && l.Protocol != "" {
		return d.lookupSRV(ctx, r, l)
	}
	ips, err := r.LookupIPAddr(ctx, l.Service)
	if err != nil {
		return nil, dnsError(err)
	}
	ts := make([]Target, 0, len(ips))
	for _, ip := range ips {
		ts = append(ts, Target{Host: ip.IP.String(), Port: d.Port})
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: dns: %s has no A or AAAA record", ErrNotFound, l.Service)
	}
	return normalize(ts), nil
}

func (d DNS) lookupSRV(ctx context.Context, r *net.Resolver, l Lookup) ([]Target, error) {
	_, srvs, err := r.LookupSRV(ctx, l.PortName, l.Protocol, l.Service)
	if err != nil && len(srvs) == 0 {
		return nil, dnsError(err)
	}
	var ts []Target
	var errs []error
	resolved := map[string][]net.IPAddr{}
	for _, s := range srvs {
		name := s.Target
		if name == "." || name == "" {
			continue
		}
		ips, ok := resolved[name]
		if !ok {
			if ips, err = r.LookupIPAddr(ctx, name); err != nil {
				errs = append(errs, fmt.Errorf("SRV target %s: %w", name, dnsError(err)))
				if ctx.Err() != nil {
					break
				}
			}
			resolved[name] = ips
		}
		for _, ip := range ips {
			ts = append(ts, Target{Host: ip.IP.String(), Port: int(s.Port)})
		}
	}
	if len(ts) == 0 {
		name := "_" + l.PortName + "._" + l.Protocol + "." + l.Service
		if len(errs) == 0 {
			return nil, fmt.Errorf("%w: dns: %s has no SRV record with a target", ErrNotFound, name)
		}
		// Wraps ErrNotFound when a target name does not exist.
		return nil, fmt.Errorf("discovery: dns: no target of %s resolves: %w", name, errors.Join(errs...))
	}
	return normalize(ts), nil
}

func (d DNS) resolver() *net.Resolver {
	if d.Server == "" {
		return net.DefaultResolver
	}
	server := d.Server
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, network, server)
		},
	}
}

// dnsError wraps a resolver error in ErrNotFound when the name or the records do not
// exist, and returns it as it is otherwise.
func dnsError(err error) error {
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		return fmt.Errorf("%w: dns: %w", ErrNotFound, err)
	}
	return fmt.Errorf("discovery: dns: %w", err)
}
