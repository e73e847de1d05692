package spantest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/internal/spantest"
)

// A test gives Provider to its systems and waits for the spans they end.
func Example() {
	t := &testing.T{}
	r := spantest.NewRecorder(t)
	ctx, parent := r.Provider.Tracer("example").Start(context.Background(), "parent")
	_, child := r.Provider.Tracer("example").Start(ctx, "child")
	child.End()
	parent.End()
	s := r.WaitFor(t, "child", time.Second)
	fmt.Println(s.Parent().SpanID() == parent.SpanContext().SpanID())
	// Output: true
}
