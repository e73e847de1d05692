package supervision_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/supervision"
)

func TestDirectiveString(t *testing.T) {
	tests := []struct {
		d    supervision.Directive
		want string
	}{
		{supervision.Restart, "restart"},
		{supervision.Resume, "resume"},
		{supervision.Stop, "stop"},
		{supervision.Escalate, "escalate"},
		{supervision.Directive(4), "directive(4)"},
		{supervision.Directive(-1), "directive(-1)"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("Directive(%d).String() = %q, want %q", int(tt.d), got, tt.want)
		}
	}
}

func TestZeroDirectiveIsRestart(t *testing.T) {
	var d supervision.Directive
	if d != supervision.Restart {
		t.Fatalf("zero Directive = %v, want restart", d)
	}
}

func TestDefaultDecider(t *testing.T) {
	for _, reason := range []error{nil, errors.New("boom"), supervision.NewPanicError("x", nil)} {
		if got := supervision.DefaultDecider(reason); got != supervision.Restart {
			t.Errorf("DefaultDecider(%v) = %v, want restart", reason, got)
		}
	}
}
