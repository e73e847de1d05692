package archlint

import (
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Module is the import path of Troupe's module; the analyzers know its internal/ tree
// and its examples/ and testkit/ trees by it.
const Module = "github.com/troupe-go/troupe"

// NoInternalImport reports an import of the module's internal/ packages from examples/
// (any file, tests included: users copy those too) or from a package of testkit/ that
// users can import (its non-test files; testkit/x/internal/... is testkit's own).
var NoInternalImport = &analysis.Analyzer{
	Name: "nointernalimport",
	Doc:  "examples/ and the public test kit do not import the module's internal/ packages",
	Run:  runNoInternalImport,
}

func runNoInternalImport(pass *analysis.Pass) (any, error) {
	path := strings.TrimSuffix(pass.Pkg.Path(), "_test")
	examples := under(path, Module+"/examples")
	testkit := under(path, Module+"/testkit") && !strings.Contains(path, "/internal/") && !strings.HasSuffix(path, "/internal")
	if !examples && !testkit {
		return nil, nil
	}
	for _, f := range pass.Files {
		if testkit && isTestFile(pass, f.Pos()) {
			continue
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				continue
			}
			if under(p, Module+"/internal") {
				pass.Reportf(imp.Pos(), "%s imports %s: examples and the test kit use only the public API, so that users can copy them", path, p)
			}
		}
	}
	return nil, nil
}

// under says whether the import path p is root or inside it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}
