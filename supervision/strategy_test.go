package supervision_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/supervision"
)

var (
	errResume   = errors.New("resume me")
	errStop     = errors.New("stop me")
	errEscalate = errors.New("escalate me")
	errRestart  = errors.New("restart me")
)

func byReason(reason error) supervision.Directive {
	switch {
	case errors.Is(reason, errResume):
		return supervision.Resume
	case errors.Is(reason, errStop):
		return supervision.Stop
	case errors.Is(reason, errEscalate):
		return supervision.Escalate
	}
	return supervision.Restart
}

func TestStrategyDirectives(t *testing.T) {
	type strategy struct {
		name string
		s    supervision.Strategy
		all  bool
	}
	strategies := []strategy{
		{"OneForOne", supervision.OneForOne{Decider: byReason}, false},
		{"AllForOne", supervision.AllForOne{Decider: byReason}, true},
	}
	tests := []struct {
		reason  error
		want    supervision.Directive
		wantAll bool // AllChildren when the strategy is AllForOne
	}{
		{errRestart, supervision.Restart, true},
		{errResume, supervision.Resume, true},
		{errStop, supervision.Stop, true},
		{errEscalate, supervision.Escalate, false},
		{supervision.NewPanicError(errStop, nil), supervision.Stop, true},
	}
	for _, st := range strategies {
		for _, tt := range tests {
			t.Run(st.name+"/"+tt.reason.Error(), func(t *testing.T) {
				var stats supervision.RetryStats
				d := st.s.Decide(&stats, tt.reason, t0)
				want := supervision.Decision{Directive: tt.want, AllChildren: st.all && tt.wantAll}
				if d != want {
					t.Fatalf("Decide = %+v, want %+v", d, want)
				}
				wantCount := 0
				if tt.want == supervision.Restart {
					wantCount = 1
				}
				if stats.Count() != wantCount {
					t.Fatalf("stats.Count() = %d, want %d (only restarts are counted)", stats.Count(), wantCount)
				}
			})
		}
	}
}

func TestStrategyRetryLimits(t *testing.T) {
	r := supervision.Restart
	s := supervision.Stop
	tests := []struct {
		name       string
		maxRetries int
		within     time.Duration
		at         []time.Duration // failure times after t0
		want       []supervision.Directive
	}{
		{"zero means unlimited", 0, 0, []time.Duration{0, 0, 0, 0, 0}, []supervision.Directive{r, r, r, r, r}},
		{"zero means unlimited in a window", 0, time.Second, []time.Duration{0, 0, 0, 0}, []supervision.Directive{r, r, r, r}},
		{"negative means never", -1, time.Minute, []time.Duration{0, time.Hour}, []supervision.Directive{s, s}},
		{"limit without window", 2, 0, []time.Duration{0, time.Hour, 2 * time.Hour}, []supervision.Directive{r, r, s}},
		{"limit within window", 2, time.Minute, []time.Duration{0, time.Second, 2 * time.Second}, []supervision.Directive{r, r, s}},
		{"window boundary", 1, time.Minute, []time.Duration{0, time.Minute}, []supervision.Directive{r, s}},
		{"window expires", 1, time.Minute, []time.Duration{0, time.Minute + 1}, []supervision.Directive{r, r}},
	}
	for _, tt := range tests {
		for _, all := range []bool{false, true} {
			var st supervision.Strategy = supervision.OneForOne{MaxRetries: tt.maxRetries, Within: tt.within}
			if all {
				st = supervision.AllForOne{MaxRetries: tt.maxRetries, Within: tt.within}
			}
			t.Run(fmt.Sprintf("%T/%s", st, tt.name), func(t *testing.T) {
				var stats supervision.RetryStats
				for i, at := range tt.at {
					d := st.Decide(&stats, errRestart, t0.Add(at))
					want := supervision.Decision{Directive: tt.want[i], AllChildren: all}
					if d != want {
						t.Fatalf("%T failure %d at +%v: Decide = %+v, want %+v", st, i, at, d, want)
					}
				}
			})
		}
	}
}

func TestStrategyDeciderPanic(t *testing.T) {
	boom := errors.New("boom")
	panics := []struct {
		name  string
		value any
	}{
		{"string", "decider exploded"},
		{"error", boom},
	}
	for _, p := range panics {
		for _, st := range []supervision.Strategy{
			supervision.OneForOne{Decider: func(error) supervision.Directive { panic(p.value) }},
			supervision.AllForOne{Decider: func(error) supervision.Directive { panic(p.value) }},
		} {
			t.Run(fmt.Sprintf("%T/%s", st, p.name), func(t *testing.T) {
				var stats supervision.RetryStats
				d := st.Decide(&stats, errRestart, t0)
				if d.Directive != supervision.Stop || d.AllChildren || d.DeciderErr == nil {
					t.Fatalf("%T: Decide = %+v, want Stop of the failed child with DeciderErr", st, d)
				}
				var pe *supervision.PanicError
				if !errors.As(d.DeciderErr, &pe) || pe.Value != p.value || len(pe.Stack) == 0 {
					t.Fatalf("DeciderErr %v does not hold the panic value and stack", d.DeciderErr)
				}
				if err, ok := p.value.(error); ok && !errors.Is(d.DeciderErr, err) {
					t.Fatalf("errors.Is(DeciderErr, %v) = false", err)
				}
				if stats.Count() != 0 {
					t.Fatalf("stats.Count() = %d, want 0", stats.Count())
				}
			})
		}
	}
}

func TestStrategyUndefinedDirective(t *testing.T) {
	st := supervision.AllForOne{Decider: func(error) supervision.Directive { return supervision.Directive(9) }}
	d := st.Decide(&supervision.RetryStats{}, errRestart, t0)
	if d.Directive != supervision.Stop || d.AllChildren || d.DeciderErr == nil {
		t.Fatalf("Decide = %+v, want Stop with DeciderErr", d)
	}
	if !strings.Contains(d.DeciderErr.Error(), "directive(9)") {
		t.Fatalf("DeciderErr = %q, want it to name directive(9)", d.DeciderErr)
	}
}

func TestStrategyNilStats(t *testing.T) {
	for _, st := range []supervision.Strategy{
		supervision.OneForOne{MaxRetries: 1},
		supervision.AllForOne{MaxRetries: 1},
	} {
		for range 3 {
			if d := st.Decide(nil, errRestart, t0); d.Directive != supervision.Restart {
				t.Fatalf("%T: Decide(nil stats) = %+v, want restart", st, d)
			}
		}
		if d := (supervision.OneForOne{MaxRetries: -1}).Decide(nil, errRestart, t0); d.Directive != supervision.Stop {
			t.Fatalf("never-restart with nil stats = %+v, want stop", d)
		}
	}
}

func TestDefaultStrategy(t *testing.T) {
	st := supervision.DefaultStrategy()
	if _, ok := st.(supervision.OneForOne); !ok {
		t.Fatalf("DefaultStrategy() is %T, want OneForOne", st)
	}
	var stats supervision.RetryStats
	for i := range 1000 {
		d := st.Decide(&stats, errStop, t0)
		if d != (supervision.Decision{Directive: supervision.Restart}) {
			t.Fatalf("failure %d: Decide = %+v, want restart of the failed child only", i, d)
		}
	}
}
