package actor_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// A system configured without a logger writes warnings and errors to standard error:
// a panicking actor is never invisible.
func TestDefaultLoggerWritesFailuresToStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	sys, err := actor.New("stderr", actor.Config{})
	os.Stderr = saved
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message() {
		case "crash":
			panic("visible by default")
		case "ping":
			_ = ctx.Respond("pong")
		}
	}), "crasher")
	_ = ref.Tell("crash")
	// The restarted instance answers after the parent has logged the failure.
	if _, err := actor.Ask[string](t.Context(), ref, "ping"); err != nil {
		t.Fatal(err)
	}
	if err := sys.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	out, _ := io.ReadAll(r)
	for _, want := range []string{"ERROR", "actor panicked", "/user/crasher", "visible by default", "goroutine "} {
		if !bytes.Contains(out, []byte(want)) {
			t.Fatalf("stderr lacks %q:\n%s", want, out)
		}
	}
}

// A *slog.Logger receives the runtime's logs, with the actor's path and the panic's
// stack as attributes.
func TestSlogLoggerReceivesRuntimeLogs(t *testing.T) {
	records := make(chan slog.Record, 16)
	sys := testkit.NewSystem(t, actor.Config{Slog: slog.New(handlerFunc(func(r slog.Record) { records <- r }))})
	ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if ctx.Message() == "crash" {
			panic("through slog")
		}
	}), "crasher")
	_ = ref.Tell("crash")
	for r := range records {
		if r.Message != "actor panicked" {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		if r.Level != slog.LevelError || attrs["actor"] != "/user/crasher" || !strings.Contains(attrs["stacktrace"], "goroutine ") {
			t.Fatalf("record %v %q with %v", r.Level, r.Message, attrs)
		}
		return
	}
}

// handlerFunc is a slog.Handler that hands every record, with the attributes added by
// With, to f.
type handlerFunc func(slog.Record)

func (f handlerFunc) Enabled(context.Context, slog.Level) bool { return true }
func (f handlerFunc) Handle(_ context.Context, r slog.Record) error {
	f(r.Clone())
	return nil
}
func (f handlerFunc) WithAttrs(as []slog.Attr) slog.Handler {
	return handlerFunc(func(r slog.Record) {
		r.AddAttrs(as...)
		f(r)
	})
}
func (f handlerFunc) WithGroup(string) slog.Handler { return f }

type quietNotice struct{}

func (quietNotice) SuppressDeadLetterLog() {}

// A dead letter of a DeadLetterSuppression message is published and counted, but not
// logged; any other is logged.
func TestSuppressedDeadLettersAreCountedNotLogged(t *testing.T) {
	logged := make(chan string, 16)
	sys := testkit.NewSystem(t, actor.Config{Slog: slog.New(handlerFunc(func(r slog.Record) {
		if r.Message == "dead letter" {
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "type" {
					logged <- a.Value.String()
				}
				return true
			})
		}
	}))})
	probe := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), probe.Ref())
	_ = sys.DeadLetters().Tell(quietNotice{})
	_ = sys.DeadLetters().Tell("loud")
	testkit.ExpectMsgType[actor.DeadLetter](probe)
	testkit.ExpectMsgType[actor.DeadLetter](probe)
	if got := <-logged; got != "string" {
		t.Fatalf("logged a dead letter of type %s, want only the string", got)
	}
	if n := sys.DeadLetterCount(); n != 2 {
		t.Fatalf("DeadLetterCount = %d, want 2", n)
	}
}

// After a burst, the count of dead letters that were not logged is written when the
// window ends, even if no dead letter follows.
func TestDeadLetterBurstIsSummarized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		logged, summary := 0, int64(-1)
		sys := testkit.NewSystem(t, actor.Config{Slog: slog.New(handlerFunc(func(r slog.Record) {
			mu.Lock()
			defer mu.Unlock()
			switch r.Message {
			case "dead letter":
				logged++
			case "dead letters not logged":
				r.Attrs(func(a slog.Attr) bool {
					if a.Key == "count" {
						summary = a.Value.Int64()
					}
					return true
				})
			}
		}))})
		for range 50 {
			_ = sys.DeadLetters().Tell("lost")
		}
		time.Sleep(2 * time.Second) // virtual: the window (1s) ends
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if logged != 10 || summary != 40 {
			t.Fatalf("logged %d dead letters and summarised %d, want 10 and 40", logged, summary)
		}
	})
}
