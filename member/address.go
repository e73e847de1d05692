package member

import (
	"net/netip"
	"strconv"
	"strings"
)

// CompareAddress orders two unique addresses: it is the one order by address of the
// whole project, behind every "lowest address" rule (the equal split of keep-majority,
// equal ages, the member responsible for a side) and every list ordered by address. It
// returns -1, 0 or +1.
//
// Addr is read as [scheme://][system@]host:port (an IPv6 host in brackets), and two
// addresses are ordered by
//
//  1. host: hosts that are IP addresses first, ordered as addresses (every IPv4 address
//     before every IPv6 one, then by their bytes; an IPv4-mapped IPv6 address counts as
//     the IPv4 address), then the other host names, ordered as strings;
//  2. port, as a number;
//  3. system name, as a string;
//  4. the whole Addr as a string, so that two different addresses never compare equal;
//  5. uid.
//
// An Addr that does not have that shape (no numeric port) comes after every Addr that
// does, and such Addrs are ordered as strings, then by uid. The system name comes after
// host and port, so the member on the lowest host and port is the lowest whatever the
// systems are called. Every node computes the same order from the same addresses,
// which is all the age and equal-split rules need.
func CompareAddress(a, b UniqueAddress) int {
	if c := compareAddr(a.Addr, b.Addr); c != 0 {
		return c
	}
	switch {
	case a.UID < b.UID:
		return -1
	case a.UID > b.UID:
		return 1
	}
	return 0
}

// Compare orders u and o as CompareAddress does: -1, 0 or +1.
func (u UniqueAddress) Compare(o UniqueAddress) int { return CompareAddress(u, o) }

// addrKey is an Addr taken apart for CompareAddress.
type addrKey struct {
	ok     bool       // the Addr has a host and a numeric port
	isIP   bool       // the host is an IP address, in ip
	ip     netip.Addr // unmapped: an IPv4-mapped IPv6 address is its IPv4 address
	host   string
	port   uint64
	system string
}

// compareAddr compares two Addr strings as CompareAddress describes.
func compareAddr(a, b string) int {
	if a == b {
		return 0
	}
	ka, kb := parseAddr(a), parseAddr(b)
	if ka.ok != kb.ok {
		if ka.ok {
			return -1
		}
		return 1
	}
	if ka.ok {
		if c := compareHost(ka, kb); c != 0 {
			return c
		}
		switch {
		case ka.port < kb.port:
			return -1
		case ka.port > kb.port:
			return 1
		}
		if c := strings.Compare(ka.system, kb.system); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// compareHost orders IP hosts before host names, IPs as addresses, names as strings.
func compareHost(a, b addrKey) int {
	switch {
	case a.isIP && b.isIP:
		return a.ip.Compare(b.ip)
	case a.isIP:
		return -1
	case b.isIP:
		return 1
	}
	return strings.Compare(a.host, b.host)
}

// parseAddr takes s apart as [scheme://][system@]host:port; ok is false when s has no
// host or no numeric port. It does not allocate.
func parseAddr(s string) addrKey {
	var k addrKey
	rest := s
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		k.system, rest = rest[:i], rest[i+1:]
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return addrKey{}
	}
	port, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil {
		return addrKey{}
	}
	host := rest[:i]
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	if host == "" {
		return addrKey{}
	}
	k.ok, k.host, k.port = true, host, port
	if ip, err := netip.ParseAddr(host); err == nil {
		k.isIP, k.ip = true, ip.Unmap()
	}
	return k
}
