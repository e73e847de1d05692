// Command archlint checks the rules of Troupe's architecture that a program can check
// (see package archlint): `go run ./internal/archlint/cmd/archlint ./...`.
package main

import (
	"github.com/troupe-go/troupe/internal/archlint"
	"golang.org/x/tools/go/analysis/multichecker"
)

func main() {
	multichecker.Main(archlint.NoInternalImport, archlint.PureCore, archlint.NoTestHook)
}
