package rollingtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/troupe-go/troupe/testkit/pgtest"
	"go.uber.org/goleak"
)

// target is the PostgreSQL server the nodes share as their journal.
var target pgtest.Target

func TestMain(m *testing.M) {
	if os.Getenv(envNode) != "" {
		os.Exit(runNode())
	}
	code := pgtest.Main(m, &target)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
