package pgtest_test

import (
	"errors"
	"fmt"

	"github.com/troupe-go/troupe/testkit/pgtest"
)

// A test package starts one server for all its tests from TestMain:
//
//	var target pgtest.Target
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &target)) }
//
// and its tests connect with target.ConnString.
func ExampleFindBinDir() {
	_, err := pgtest.FindBinDir()
	fmt.Println(err == nil || errors.Is(err, pgtest.ErrNoPostgres))
	// Output: true
}
