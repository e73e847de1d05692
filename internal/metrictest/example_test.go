package metrictest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/internal/metrictest"
)

// A test records into Provider and reads the points back.
func Example() {
	t := &testing.T{}
	r := metrictest.NewReader(t)
	c, _ := r.Provider.Meter("example").Int64Counter("example.count")
	c.Add(context.Background(), 3)
	v, ok := metrictest.IntValue(r.Metric(r.Collect(), "example.count", ""))
	fmt.Println(v, ok)
	// Output: 3 true
}
