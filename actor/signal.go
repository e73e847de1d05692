package actor

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// ShutdownOnSignal makes the process's first SIGTERM or interrupt (or one of sigs,
// when given) run the system's coordinated shutdown, as Shutdown does: the tasks the
// extensions registered run phase by phase (sharding hands its shards off, singletons
// hand over, the member leaves the cluster, the transport flushes what is queued), and
// then every actor stops. It takes at most the sum of the timeouts of the phases that
// have tasks (Config.PhaseTimeout, 10s each by default, or Config.PhaseTimeouts), which
// CoordinatedShutdown().Bound returns once the extensions have started. Wait
// for Terminated, then exit: Shutdown called again returns the outcome. A failed or
// overrun task is logged at error. A second signal during the shutdown is left to Go's
// default behaviour, which ends the process at once.
//
// It returns a function that stops listening for the signals (it does not shut the
// system down); the listening ends by itself once the system has terminated.
func (s *System) ShutdownOnSignal(sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
	go func() {
		select {
		case sig := <-ch:
			stop() // a second signal takes Go's default course
			s.log.Info("signal received; shutting the system down", zap.Stringer("signal", sig))
			if err := s.Shutdown(context.Background()); err != nil {
				s.log.Error("coordinated shutdown after a signal", zap.Error(err))
			}
		case <-done:
		case <-s.Terminated():
			stop()
		}
	}()
	return stop
}
