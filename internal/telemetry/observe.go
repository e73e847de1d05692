package telemetry

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// Observe registers cb as the callback of the observable instruments insts on mt, and
// unregisters it when the system terminates (onTerminated is the system's
// OnTerminated), so that a provider outliving the system reads no stale counters.
func Observe(onTerminated func(func()), mt metric.Meter, cb metric.Callback, insts ...metric.Observable) error {
	reg, err := mt.RegisterCallback(cb, insts...)
	if reg != nil {
		onTerminated(func() { _ = reg.Unregister() })
	}
	return err
}

// Report logs, as one warning, the errors of creating a package's instruments: the
// metrics of what (a package name) that could not be created are missing, and nothing
// else changes.
func Report(log *zap.Logger, what string, errs []error) {
	if err := errors.Join(errs...); err != nil {
		log.Warn("some "+what+" metrics are unavailable", zap.Error(err))
	}
}
