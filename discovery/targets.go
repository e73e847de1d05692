package discovery

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// normalize sorts targets by host, then port, and drops duplicates. It is how every
// implementation keeps the promise of Discovery.Lookup.
func normalize(ts []Target) []Target {
	slices.SortFunc(ts, func(a, b Target) int {
		if c := cmp.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return cmp.Compare(a.Port, b.Port)
	})
	return slices.Compact(ts)
}

// ParseTarget parses "host:port", "host", "[v6]:port", "[v6]" or a bare IPv6 address
// into a Target. The port, when present, must be a number from 1 to 65535; the host
// must not be empty or contain spaces, control characters or slashes.
func ParseTarget(s string) (Target, error) {
	if s == "" {
		return Target{}, fmt.Errorf("discovery: empty address")
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' }) >= 0 {
		return Target{}, fmt.Errorf("discovery: address %q: unexpected space, control character or slash", s)
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		if host == "" {
			return Target{}, fmt.Errorf("discovery: address %q: no host", s)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return Target{}, fmt.Errorf("discovery: address %q: port must be a number from 1 to 65535", s)
		}
		return Target{Host: host, Port: p}, nil
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host := s[1 : len(s)-1]
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return Target{}, fmt.Errorf("discovery: address %q: brackets hold an IPv6 address", s)
		}
		return Target{Host: host}, nil
	}
	if !strings.Contains(s, ":") {
		return Target{Host: s}, nil
	}
	if ip := net.ParseIP(s); ip != nil {
		return Target{Host: s}, nil
	}
	return Target{}, fmt.Errorf("discovery: address %q: want host, host:port or [IPv6]:port", s)
}
