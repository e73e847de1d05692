package sim_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/testkit/sim"
)

// A seed gives a fault schedule; sim.Run plays it against five complete nodes in a
// testing/synctest bubble (see the package documentation and TestSimulation). The
// schedule alone can be read, or written by hand (Options.Schedule):
func ExampleGenerate() {
	for _, e := range sim.Generate(7, 5, 4, 2*time.Minute) {
		fmt.Println(e)
	}
	// Output:
	// 27.3s  leave n0
	// 45s  heal
	// 58.9s  crash n4
	// 1m19.4s  delay n1 <-> n2 by 1.091s
	// 1m43.4s  heal
	// 1m44.4s  restart n0
	// 1m45.4s  restart n4
}
