package discovery

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Static answers lookups from a fixed table: for tests, for development, and for
// deployments whose addresses are known. It ignores Lookup.PortName and Protocol.
type Static struct {
	// Services maps a service name to its addresses, each "host:port", "host",
	// "[IPv6]:port" or a bare IPv6 address (see ParseTarget). An address without a
	// port gives a Target with Port 0.
	Services map[string][]string
}

// Validate parses every address of the table and returns the errors of the bad ones,
// joined, naming the service and the address. Lookup returns the same error for a
// service with a bad address.
func (s Static) Validate() error {
	names := make([]string, 0, len(s.Services))
	for name := range s.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		if _, err := s.parse(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Lookup returns the addresses of l.Service, sorted and without duplicates. A name
// that is not in the table, or has no address, gives ErrNotFound (wrapped); a bad
// address gives an error that names it.
func (s Static) Lookup(ctx context.Context, l Lookup) ([]Target, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ts, err := s.parse(l.Service)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: static: service %q is not in the table", ErrNotFound, l.Service)
	}
	return ts, nil
}

func (s Static) parse(service string) ([]Target, error) {
	var ts []Target
	var errs []error
	for _, a := range s.Services[service] {
		t, err := ParseTarget(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("static: service %q: %w", service, err))
			continue
		}
		ts = append(ts, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return normalize(ts), nil
}
