package archlint

import (
	"go/ast"
	"go/types"
	"strconv"

	"golang.org/x/tools/go/analysis"
)

// PureCore reports, in the non-test files of a core (a package marked //troupe:core), a
// go statement, a call that reads the clock or waits on it, a draw from a random source
// nobody seeded, and an import that reaches the network or the layers a core is below.
// A core takes its inputs and the current time and returns what to do, so that tests
// and simulations drive it, in any order and in virtual time, and reproduce a run from a
// seed.
var PureCore = &analysis.Analyzer{
	Name: "purecore",
	Doc:  "a protocol core starts no goroutine, reads no clock and imports no transport",
	Run:  runPureCore,
}

// clockFuncs are the functions of package time that read or wait on the clock.
var clockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// randPackages hold package-level functions drawing from a source seeded by the
// runtime; a core draws from a *rand.Rand its caller gives it.
var randPackages = map[string]bool{"math/rand": true, "math/rand/v2": true}

// forbiddenImports are what a core must not import, with the reason.
var forbiddenImports = map[string]string{
	"net":                              "the network",
	"net/http":                         "the network",
	"github.com/hashicorp/serf/serf":   "serf",
	"github.com/hashicorp/memberlist":  "memberlist",
	Module + "/remote":                 "the transport",
	Module + "/cluster":                "the cluster layer (its types are in package member)",
	"github.com/dgraph-io/badger/v4":   "storage",
	"github.com/jackc/pgx/v5":          "storage",
	"github.com/jackc/pgx/v5/pgxpool":  "storage",
	"github.com/jackc/pgx/v5/pgconn":   "storage",
	"github.com/hashicorp/serf/client": "serf",
}

func runPureCore(pass *analysis.Pass) (any, error) {
	if !isCore(pass.Files) {
		return nil, nil
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f.Pos()) {
			continue
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				continue
			}
			if what, bad := forbiddenImports[p]; bad {
				pass.Reportf(imp.Pos(), "a core does not import %s (%s): it takes inputs and returns decisions", p, what)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				pass.Reportf(n.Pos(), "a core starts no goroutine: return what to do and let the actor around it run it")
			case *ast.SelectorExpr:
				fn, ok := pass.TypesInfo.Uses[n.Sel].(*types.Func)
				if !ok || fn.Pkg() == nil {
					return true
				}
				if sig, ok := fn.Type().(*types.Signature); !ok || sig.Recv() != nil {
					return true
				}
				switch {
				case fn.Pkg().Path() == "time" && clockFuncs[fn.Name()]:
					pass.Reportf(n.Pos(), "a core reads no clock (time.%s): take the current time as an argument", fn.Name())
				case randPackages[fn.Pkg().Path()] && fn.Name() != "New" && fn.Name() != "NewSource" && fn.Name() != "NewPCG" && fn.Name() != "NewChaCha8" && fn.Name() != "NewZipf":
					pass.Reportf(n.Pos(), "a core draws no unseeded random number (%s.%s): take a *rand.Rand from the caller", fn.Pkg().Name(), fn.Name())
				}
			}
			return true
		})
	}
	return nil, nil
}
