package actor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Scheme is the URI scheme of Troupe actor paths: troupe://system@host:port/user/a.
const Scheme = "troupe"

// ErrInvalidPath is returned for an actor path or address that cannot be parsed.
var ErrInvalidPath = errors.New("actor: invalid actor path")

// Address names an actor system on the network, as in troupe://orders@10.0.0.5:2552. A
// system without remoting has only a System name; Host and Port are then empty.
type Address struct {
	// System is the actor system's name.
	System string
	// Host is the host name or IP the system is reached at; empty without remoting.
	Host string
	// Port is the TCP port the system is reached at; 0 without remoting.
	Port int
}

// HasHost reports whether the address can be reached over the network.
func (a Address) HasHost() bool { return a.Host != "" }

// HostPort returns "host:port", bracketing IPv6 hosts, or "" without a host.
func (a Address) HostPort() string {
	if a.Host == "" {
		return ""
	}
	if strings.Contains(a.Host, ":") {
		return "[" + a.Host + "]:" + strconv.Itoa(a.Port)
	}
	return a.Host + ":" + strconv.Itoa(a.Port)
}

// String returns the address as troupe://system@host:port, or troupe://system when it
// has no host.
func (a Address) String() string {
	if a.Host == "" {
		return Scheme + "://" + a.System
	}
	return Scheme + "://" + a.System + "@" + a.HostPort()
}

// ParseAddress parses troupe://system@host:port (or troupe://system).
func ParseAddress(s string) (Address, error) {
	addr, rest, err := splitAddress(s)
	if err != nil {
		return Address{}, err
	}
	if rest != "" {
		return Address{}, fmt.Errorf("%w: %q has a path; use ParsePath", ErrInvalidPath, s)
	}
	return addr, nil
}

// ParsePath splits a full actor path such as troupe://sys@127.0.0.1:2552/user/a#42 into
// its address, its path ("/user/a") and the actor's incarnation uid (0 when the path has
// no "#uid" fragment). A path without the scheme ("/user/a") has the zero Address.
func ParsePath(s string) (addr Address, path string, uid uint64, err error) {
	rest := s
	if strings.HasPrefix(s, Scheme+"://") {
		addr, rest, err = splitAddress(s)
		if err != nil {
			return Address{}, "", 0, err
		}
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		uid, err = strconv.ParseUint(rest[i+1:], 10, 64)
		if err != nil || uid == 0 {
			return Address{}, "", 0, fmt.Errorf("%w: %q has a bad uid", ErrInvalidPath, s)
		}
		rest = rest[:i]
	}
	if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "//") {
		return Address{}, "", 0, fmt.Errorf("%w: %q has no absolute path", ErrInvalidPath, s)
	}
	return addr, rest, uid, nil
}

// splitAddress parses the address part of s and returns what follows it.
func splitAddress(s string) (Address, string, error) {
	rest, ok := strings.CutPrefix(s, Scheme+"://")
	if !ok {
		return Address{}, "", fmt.Errorf("%w: %q does not start with %s://", ErrInvalidPath, s, Scheme)
	}
	end := strings.IndexByte(rest, '/')
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	name, hostport, remote := strings.Cut(authority, "@")
	if err := validateSystemName(name); err != nil {
		return Address{}, "", fmt.Errorf("%w: %q: %v", ErrInvalidPath, s, err)
	}
	addr := Address{System: name}
	if !remote {
		return addr, tail, nil
	}
	i := strings.LastIndexByte(hostport, ':')
	if i <= 0 {
		return Address{}, "", fmt.Errorf("%w: %q has no port", ErrInvalidPath, s)
	}
	host, port := hostport[:i], hostport[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 || host == "" {
		return Address{}, "", fmt.Errorf("%w: %q has a bad host or port", ErrInvalidPath, s)
	}
	addr.Host, addr.Port = host, p
	return addr, tail, nil
}
