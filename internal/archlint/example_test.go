package archlint_test

import (
	"fmt"

	"github.com/troupe-go/troupe/internal/archlint"
)

// The analyzers run together from the command archlint; each can also join another
// driver (a multichecker, gopls, a test with analysistest).
func Example() {
	for _, a := range []interface{ String() string }{archlint.NoInternalImport, archlint.PureCore, archlint.NoTestHook} {
		fmt.Println(a)
	}
	// Output:
	// nointernalimport
	// purecore
	// notesthook
}
