package pglease

import (
	"context"

	"github.com/troupe-go/troupe/lease"
)

// newObserved is New, with renewed called after each renewal with its outcome.
func newObserved(ctx context.Context, settings lease.Settings, cfg Config, renewed func(outcome)) (*Lease, error) {
	l, err := New(ctx, settings, cfg)
	if err == nil {
		l.renewed = renewed
	}
	return l, err
}
