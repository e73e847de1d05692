package actor_test

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/testkit"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// counts reads the runtime's counters of a collection.
func counts(t *testing.T, m *metrictest.Reader, ms map[string]metricdata.Metrics) map[string]int64 {
	t.Helper()
	out := make(map[string]int64)
	for _, c := range []struct{ name, unit string }{
		{"troupe.actor.live", "{actor}"}, {"troupe.actor.spawned", "{actor}"}, {"troupe.actor.stopped", "{actor}"},
		{"troupe.actor.restarts", "{restart}"}, {"troupe.actor.failures", "{failure}"},
	} {
		v, ok := metrictest.IntValue(m.Metric(ms, c.name, c.unit))
		if !ok {
			t.Fatalf("%s has no point", c.name)
		}
		out[c.name] = v
	}
	dl := m.Metric(ms, "troupe.actor.dead_letters", "{message}")
	for _, r := range []string{"recipient_stopped", "mailbox_full", "no_recipient", "late_reply", "dead_letters", "other"} {
		v, ok := metrictest.IntValue(dl, attribute.String("reason", r))
		if !ok {
			t.Fatalf("troupe.actor.dead_letters has no point for reason %s", r)
		}
		out[r] = v
	}
	return out
}

func TestMetricsCountLifecycleAndDeadLetters(t *testing.T) {
	m := metrictest.NewReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.Provider})
	probe := testkit.NewProbe(t, sys)
	before := counts(t, m, m.Collect())

	// Three actors; one fails once and is restarted; one is stopped.
	var refs []actor.Ref
	for _, name := range []string{"a", "b", "c"} {
		refs = append(refs, spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			switch ctx.Message().(type) {
			case actor.Started:
				_ = probe.Ref().Tell("started")
			case string:
				panic("boom")
			}
		}), name))
	}
	probe.ReceiveN(3)
	_ = refs[0].Tell("fail")
	probe.ExpectMsg("started") // the restarted instance
	probe.Watch(refs[1])
	if err := sys.Stop(refs[1]); err != nil {
		t.Fatal(err)
	}
	probe.ExpectTerminated(refs[1])
	// Dead letters: two to the stopped actor, one to the dead-letter sink.
	_ = refs[1].Tell(1)
	_ = refs[1].Tell(2)
	_ = sys.DeadLetters().Tell(3)
	sys.EventStream().Publish(actor.DeadLetter{}) // published only: not counted

	after := counts(t, m, m.Collect())
	want := map[string]int64{
		"troupe.actor.spawned": 3, "troupe.actor.stopped": 1, "troupe.actor.live": 2,
		"troupe.actor.restarts": 1, "troupe.actor.failures": 1,
		"recipient_stopped": 2, "dead_letters": 1,
	}
	for k, v := range after {
		if got := v - before[k]; got != want[k] {
			t.Errorf("%s: %d, want %d", k, got, want[k])
		}
	}
}

func TestMetricsKindRecordsMailboxAndProcessingTime(t *testing.T) {
	m := metrictest.NewReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.Provider})
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	props := actor.PropsFunc(func(ctx actor.Context) {
		if n, ok := ctx.Message().(int); ok {
			if n == 0 {
				_ = probe.Ref().Tell("blocked")
				<-release
			}
			_ = probe.Ref().Tell(n)
		}
	})
	props.MetricsKind = "worker"
	ref := spawn(t, sys, props, "w")
	_ = ref.Tell(0)
	probe.ExpectMsg("blocked")
	for i := 1; i < 10; i++ {
		_ = ref.Tell(i)
	}
	kind := attribute.String("kind", "worker")
	ms := m.Collect()
	if v, _ := metrictest.IntValue(m.Metric(ms, "troupe.actor.mailbox.queued", "{message}"), kind); v != 9 {
		t.Errorf("queued while blocked: %d, want 9", v)
	}
	close(release)
	for i := range 10 {
		probe.ExpectMsg(i)
	}
	// The actor answers before its Receive returns, and the processing time is
	// recorded after: its Terminated says it has handled everything.
	probe.Watch(ref)
	if err := sys.Stop(ref); err != nil {
		t.Fatal(err)
	}
	probe.ExpectTerminated(ref)
	ms = m.Collect()
	if v, ok := metrictest.IntValue(m.Metric(ms, "troupe.actor.mailbox.queued", "{message}"), kind); !ok || v != 0 {
		t.Errorf("queued after: %d (%v), want 0", v, ok)
	}
	wait, ok := metrictest.HistPoint[float64](m.Metric(ms, "troupe.actor.mailbox.time", "s"), kind)
	if !ok || wait.Count != 10 {
		t.Errorf("mailbox time: %d points (%v), want 10", wait.Count, ok)
	}
	proc, ok := metrictest.HistPoint[float64](m.Metric(ms, "troupe.actor.processing.time", "s"), kind)
	if !ok || proc.Count != 10 {
		t.Errorf("processing time: %d points (%v), want 10", proc.Count, ok)
	}
	// The blocked message's processing took at least as long as the others waited.
	if mx, _ := proc.Max.Value(); mx <= 0 {
		t.Errorf("processing time max %v", mx)
	}
}

func TestMetricsMailboxDepthIsSampled(t *testing.T) {
	m := metrictest.NewReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.Provider})
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	const n = 1000
	props := actor.PropsFunc(func(ctx actor.Context) {
		if i, ok := ctx.Message().(int); ok {
			if i == 0 {
				_ = probe.Ref().Tell("blocked")
				<-release
			}
			if i == n-1 {
				_ = probe.Ref().Tell("done")
			}
		}
	})
	props.Throughput = 100
	ref := spawn(t, sys, props, "busy")
	_ = ref.Tell(0)
	probe.ExpectMsg("blocked")
	for i := 1; i < n; i++ {
		_ = ref.Tell(i)
	}
	close(release)
	probe.ExpectMsg("done")
	p, ok := metrictest.HistPoint[int64](m.Metric(m.Collect(), "troupe.actor.mailbox.depth", "{message}"))
	if !ok || p.Count == 0 {
		t.Fatalf("no depth sample (%v)", ok)
	}
	// The first slice handled 100 of the 1000 messages and left 900: the first sample.
	if mx, _ := p.Max.Value(); mx != n-100 {
		t.Errorf("deepest sample %d, want %d", mx, n-100)
	}
}

// TestTellAllocatesNothingWithOrWithoutMetrics checks that metrics add no allocation
// to Tell and its handling: off (no provider), on for a plain actor (the counting
// path), and on for an actor kind that opts into the histograms.
func TestTellAllocatesNothingWithOrWithoutMetrics(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider bool
		kind     string
	}{{"off", false, ""}, {"on", true, ""}, {"on-kind", true, "k"}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := actor.Config{}
			if tc.provider {
				cfg.MeterProvider = metrictest.NewReader(t).Provider
			}
			sys := testkit.NewSystem(t, cfg)
			done := make(chan struct{}, 1)
			props := actor.PropsFunc(func(ctx actor.Context) {
				if _, ok := ctx.Message().(*int); ok {
					done <- struct{}{}
				}
			})
			props.MetricsKind = tc.kind
			ref := spawn(t, sys, props, "sink")
			msg := new(int)
			tell := func() {
				_ = ref.Tell(msg)
				<-done
			}
			for range 100 {
				tell() // warm up: segments, series
			}
			if a := testing.AllocsPerRun(1000, tell); a != 0 {
				t.Errorf("%v allocations per tell", a)
			}
		})
	}
}
