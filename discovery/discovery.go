package discovery

import (
	"context"
	"errors"
	"net"
	"strconv"
)

// ErrNotFound is returned, wrapped, by a lookup whose source answered but knows no
// address for the service (an unknown name, a selector that matches no pod).
var ErrNotFound = errors.New("discovery: no address found for the service")

// Lookup names what to look up.
type Lookup struct {
	// Service is the service's name: a DNS name for DNS, a key of the static table,
	// the value the label selector is formatted with for Kubernetes.
	Service string
	// PortName and Protocol ask for a named port, optionally: DNS looks up the SRV
	// records _PortName._Protocol.Service when both are set; Kubernetes takes the
	// container port named PortName when that is set (Protocol is not used there).
	PortName string
	Protocol string
}

// Target is one address a lookup found.
type Target struct {
	// Host is a host name or an IP address.
	Host string
	// Port is the port the source gave (SRV records, a named container port) or the
	// one configured; 0 when neither.
	Port int
}

// String returns the target as "host:port", or the host alone when Port is 0.
func (t Target) String() string {
	if t.Port == 0 {
		return t.Host
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// Discovery looks services up. Implementations are safe for concurrent use; a lookup
// ends when ctx does.
type Discovery interface {
	// Lookup returns the addresses the service has now, sorted and without
	// duplicates, or an error: ErrNotFound (wrapped) when the source knows none, the
	// source's failure otherwise.
	Lookup(ctx context.Context, l Lookup) ([]Target, error)
}
