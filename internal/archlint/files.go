package archlint

import (
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// isTestFile says whether pos is in a _test.go file.
func isTestFile(pass *analysis.Pass, pos token.Pos) bool {
	return strings.HasSuffix(pass.Fset.Position(pos).Filename, "_test.go")
}

// coreDirective is the line a core's doc file carries above its package clause.
const coreDirective = "//troupe:core"

// isCore says whether one of the package's files carries the core directive.
func isCore(files []*ast.File) bool {
	for _, f := range files {
		for _, g := range f.Comments {
			if g.Pos() > f.Package {
				break
			}
			for _, c := range g.List {
				if strings.TrimSpace(c.Text) == coreDirective {
					return true
				}
			}
		}
	}
	return false
}
