package supervision

import "fmt"

// PanicError is the failure reason for a panic in an actor's Receive. It keeps the
// recovered value and the stack of the goroutine at the point of the panic.
type PanicError struct {
	// Value is the value passed to panic, as returned by recover.
	Value any
	// Stack is the goroutine's stack trace, as from runtime/debug.Stack, taken inside
	// the deferred recover. It may be nil.
	Stack []byte
}

// NewPanicError returns a PanicError holding value and stack. It does not copy stack.
func NewPanicError(value any, stack []byte) *PanicError {
	return &PanicError{Value: value, Stack: stack}
}

// Error returns "panic: " followed by the recovered value formatted with %v. It does
// not include the stack. It is safe to call on a nil *PanicError.
func (e *PanicError) Error() string {
	if e == nil {
		return "panic: <nil>"
	}
	return fmt.Sprintf("panic: %v", e.Value)
}

// Unwrap returns the recovered value if it is an error, so that errors.Is and errors.As
// see through the panic; otherwise it returns nil.
func (e *PanicError) Unwrap() error {
	if e == nil {
		return nil
	}
	err, _ := e.Value.(error)
	return err
}
