//go:build unix

package actor_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// The signal runs coordinated shutdown: a task of a phase runs, and the system
// terminates.
func TestShutdownOnSignal(t *testing.T) {
	sys := testkit.NewSystem(t)
	ran := make(chan struct{})
	if err := sys.CoordinatedShutdown().AddTask(actor.PhaseClusterLeave, "leave", func(context.Context) error {
		close(ran)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stop := sys.ShutdownOnSignal(syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	wait := time.After(testkit.Dilated(10 * time.Second))
	for _, ch := range []<-chan struct{}{ran, sys.Terminated()} {
		select {
		case <-ch:
		case <-wait:
			t.Fatal("no coordinated shutdown after the signal")
		}
	}
}

// A system that shuts down by itself stops listening: the signal's listener ends with
// it (goleak checks that nothing is left).
func TestShutdownOnSignalEndsWithTheSystem(t *testing.T) {
	sys := testkit.NewSystem(t)
	sys.ShutdownOnSignal(syscall.SIGUSR2)
	if err := sys.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
