package pgjournal

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// MeterName is the instrumentation scope of the store's metrics.
const MeterName = "github.com/troupe-go/troupe/persistence/pgjournal"

// startMetrics registers the store's instruments on cfg.MeterProvider, when set:
// they read the counters behind Stats, in one callback. It returns the function that
// unregisters them, for Close.
func (s *Store) startMetrics() func() {
	mp := s.cfg.MeterProvider
	if mp == nil {
		return func() {}
	}
	mt := mp.Meter(MeterName)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		i, err := mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	commits := counter("troupe.pgjournal.commits", "{commit}",
		"Group-commit transactions, by outcome: committed, failed (failed as a whole).")
	writes := counter("troupe.pgjournal.writes", "{write}", "Atomic writes stored.")
	events := counter("troupe.pgjournal.events", "{event}", "Events stored; divided by committed commits, the mean size of a group commit.")
	conflicts := counter("troupe.pgjournal.conflicts", "{write}",
		"Atomic writes rejected with persistence.ErrSequenceConflict: another writer of the persistence id (two incarnations after a split brain).")
	reruns := counter("troupe.pgjournal.reruns", "{commit}",
		"Group commits run again because another transaction wrote one of their keys at the same time.")
	committed := metric.WithAttributes(attribute.String("outcome", "committed"))
	failed := metric.WithAttributes(attribute.String("outcome", "failed"))
	reg, err := mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(commits, s.stats.commits.Load(), committed)
		o.ObserveInt64(commits, s.stats.failed.Load(), failed)
		o.ObserveInt64(writes, s.stats.writes.Load())
		o.ObserveInt64(events, s.stats.events.Load())
		o.ObserveInt64(conflicts, s.stats.conflicts.Load())
		o.ObserveInt64(reruns, s.stats.reruns.Load())
		return nil
	}, commits, writes, events, conflicts, reruns)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		s.log.Warn("pgjournal: some metrics are unavailable", zap.Error(err))
	}
	if reg == nil {
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}
