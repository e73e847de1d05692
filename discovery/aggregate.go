package discovery

import (
	"context"
	"errors"
	"fmt"
)

// Aggregate asks several sources in order and returns the first non-empty answer: for
// example the Kubernetes API first, then DNS when the service account may not list
// pods.
type Aggregate struct {
	// Sources are asked in this order. Nil entries are skipped.
	Sources []Discovery
}

// Lookup returns the first source's answer that has at least one target (sorted and
// without duplicates). When every source fails or finds nothing, it returns their
// errors joined, in order, so errors.Is(err, ErrNotFound) holds when one of them
// found nothing. With no source it returns ErrNotFound. It stops when ctx ends.
func (a Aggregate) Lookup(ctx context.Context, l Lookup) ([]Target, error) {
	var errs []error
	for i, src := range a.Sources {
		if src == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
		ts, err := src.Lookup(ctx, l)
		if err == nil && len(ts) > 0 {
			return normalize(append([]Target(nil), ts...)), nil
		}
		if err == nil {
			err = fmt.Errorf("%w: source %d (%T) returned no target", ErrNotFound, i, src)
		} else {
			err = fmt.Errorf("source %d (%T): %w", i, src, err)
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%w: aggregate has no source", ErrNotFound)
	}
	return nil, errors.Join(errs...)
}
