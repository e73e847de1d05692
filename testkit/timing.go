package testkit

import (
	"os"
	"strconv"
	"time"
)

// DefaultTimeout is how long an Expect waits when given no timeout, before dilation.
const DefaultTimeout = 3 * time.Second

// TimeFactorEnv names the environment variable that dilates every testkit timeout, for
// slow or loaded machines: TROUPE_TEST_TIME_FACTOR=3 makes a 3s wait 9s.
const TimeFactorEnv = "TROUPE_TEST_TIME_FACTOR"

// Dilated scales d by TROUPE_TEST_TIME_FACTOR (a positive number; 1 when unset or
// invalid).
func Dilated(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv(TimeFactorEnv), 64)
	if err != nil || f <= 0 {
		return d
	}
	return time.Duration(float64(d) * f)
}

func timeoutOf(timeout []time.Duration) time.Duration {
	if len(timeout) > 0 && timeout[0] > 0 {
		return Dilated(timeout[0])
	}
	return Dilated(DefaultTimeout)
}
