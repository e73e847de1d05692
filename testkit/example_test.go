package testkit_test

import (
	"fmt"
	"os"
	"time"

	"github.com/troupe-go/troupe/testkit"
)

// Timeouts stretch on slow machines: TROUPE_TEST_TIME_FACTOR multiplies every wait.
func ExampleDilated() {
	old, had := os.LookupEnv(testkit.TimeFactorEnv)
	_ = os.Setenv(testkit.TimeFactorEnv, "2.5")
	fmt.Println(testkit.Dilated(2 * time.Second))
	if had {
		_ = os.Setenv(testkit.TimeFactorEnv, old)
	} else {
		_ = os.Unsetenv(testkit.TimeFactorEnv)
	}
	// Output: 5s
}
