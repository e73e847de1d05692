package supervision_test

import (
	"errors"
	"io"
	"testing"

	"github.com/troupe-go/troupe/supervision"
)

func TestPanicError(t *testing.T) {
	wrapped := errors.New("inner failure")
	tests := []struct {
		name       string
		value      any
		wantMsg    string
		wantUnwrap error
	}{
		{"string", "boom", "panic: boom", nil},
		{"int", 42, "panic: 42", nil},
		{"error", wrapped, "panic: inner failure", wrapped},
		{"sentinel", io.EOF, "panic: EOF", io.EOF},
		{"nil", nil, "panic: <nil>", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stack := []byte("goroutine 1 [running]:")
			e := supervision.NewPanicError(tt.value, stack)
			if e.Value != tt.value || string(e.Stack) != string(stack) {
				t.Fatalf("NewPanicError kept (%v, %q)", e.Value, e.Stack)
			}
			if got := e.Error(); got != tt.wantMsg {
				t.Errorf("Error() = %q, want %q", got, tt.wantMsg)
			}
			if got := e.Unwrap(); got != tt.wantUnwrap {
				t.Errorf("Unwrap() = %v, want %v", got, tt.wantUnwrap)
			}
			if tt.wantUnwrap != nil && !errors.Is(e, tt.wantUnwrap) {
				t.Errorf("errors.Is(e, %v) = false", tt.wantUnwrap)
			}
			var pe *supervision.PanicError
			if !errors.As(error(e), &pe) || pe != e {
				t.Errorf("errors.As did not find the *PanicError")
			}
		})
	}
}

func TestNilPanicError(t *testing.T) {
	var e *supervision.PanicError
	if got := e.Error(); got != "panic: <nil>" {
		t.Errorf("nil Error() = %q", got)
	}
	if got := e.Unwrap(); got != nil {
		t.Errorf("nil Unwrap() = %v", got)
	}
}
