package archlint

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// NoTestHook reports test hooks left in production code:
//   - a package variable declared in a non-test file and assigned in a test file (tests
//     reconfigure the package through it);
//   - an unexported struct field declared in a non-test file that test files write and
//     production code never does (tests steer the type through it);
//   - an exported name whose doc comment says it is there for tests.
//
// A test gets what it needs through a seam a user could use too (a Config field, a
// dialer, a transport) or builds it in its own files. Test support packages (testkit,
// and packages whose name ends in "test") are exempt: being for tests is their job.
var NoTestHook = &analysis.Analyzer{
	Name: "notesthook",
	Doc:  "production code holds no test hooks",
	Run:  runNoTestHook,
}

// forTests matches a doc comment that says its name is there for tests.
var forTests = regexp.MustCompile(`(?i)\b((only|solely) (for|by) (the |its )?tests|for tests only|test[- ]only|(set|used|called|overridden) only by (the |its )?tests|(set|overridden) by (the |its )?tests)\b`)

func runNoTestHook(pass *analysis.Pass) (any, error) {
	if testSupport(pass.Pkg.Path()) {
		return nil, nil
	}
	reportTestDocs(pass)
	var hasTests bool
	for _, f := range pass.Files {
		if isTestFile(pass, f.Pos()) {
			hasTests = true
		}
	}
	if !hasTests {
		return nil, nil
	}
	varsSet := map[*types.Var]token.Pos{}    // package variables tests assign, with where
	testWrites := map[*types.Var]token.Pos{} // fields test files write, with where
	prodWrites := map[*types.Var]bool{}      // fields production files write
	for _, f := range pass.Files {
		test := isTestFile(pass, f.Pos())
		written := func(e ast.Expr, at token.Pos) {
			v := writtenVar(pass, e)
			if v == nil {
				return
			}
			switch {
			case v.IsField() && test:
				if _, ok := testWrites[v]; !ok {
					testWrites[v] = at
				}
			case v.IsField():
				prodWrites[v] = true
			case test && v.Parent() == pass.Pkg.Scope():
				if _, ok := varsSet[v]; !ok {
					varsSet[v] = at
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					written(l, n.Pos())
				}
			case *ast.IncDecStmt:
				written(n.X, n.Pos())
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					written(n.X, n.Pos())
				}
			case *ast.SliceExpr:
				written(n.X, n.Pos()) // copy(x.f[:], b) writes an array field
			case *ast.CompositeLit:
				literalWrites(pass, n, func(v *types.Var) {
					if test {
						if _, ok := testWrites[v]; !ok {
							testWrites[v] = n.Pos()
						}
					} else {
						prodWrites[v] = true
					}
				})
			}
			return true
		})
	}
	for _, v := range sortedVars(varsSet) {
		if v.Pkg() != pass.Pkg || isTestFile(pass, v.Pos()) {
			continue
		}
		pass.Reportf(v.Pos(), "package variable %s is assigned by a test (%s): a test hook in production code", v.Name(), shortPos(pass, varsSet[v]))
	}
	for _, v := range sortedVars(testWrites) {
		if v.Exported() || prodWrites[v] || v.Pkg() != pass.Pkg || isTestFile(pass, v.Pos()) {
			continue
		}
		pass.Reportf(v.Pos(), "field %s is written only by tests (%s): a test hook in production code", v.Name(), shortPos(pass, testWrites[v]))
	}
	return nil, nil
}

// writtenVar returns the variable or field that e names when it is assigned to, or nil.
func writtenVar(pass *analysis.Pass, e ast.Expr) *types.Var {
	switch e := ast.Unparen(e).(type) {
	case *ast.IndexExpr:
		return writtenVar(pass, e.X)
	case *ast.Ident:
		v, _ := pass.TypesInfo.Uses[e].(*types.Var)
		return v
	case *ast.SelectorExpr:
		v, _ := pass.TypesInfo.Uses[e.Sel].(*types.Var)
		if v != nil && v.IsField() {
			return v.Origin()
		}
		return v
	}
	return nil
}

// literalWrites calls write with each field a struct literal sets.
func literalWrites(pass *analysis.Pass, lit *ast.CompositeLit, write func(*types.Var)) {
	tv, ok := pass.TypesInfo.Types[lit]
	if !ok {
		return
	}
	st, ok := tv.Type.Underlying().(*types.Struct)
	if !ok {
		return
	}
	for i, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok {
				if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok && v.IsField() {
					write(v.Origin())
				}
			}
			continue
		}
		if i < st.NumFields() {
			write(st.Field(i).Origin())
		}
	}
}

// testSupport says whether the package at path exists for tests (testkit and its
// sub-packages, and packages whose name ends in "test", such as journaltest): being for
// tests is its job.
func testSupport(p string) bool {
	p = strings.TrimSuffix(p, "_test")
	return strings.HasSuffix(path.Base(p), "test") || under(p, Module+"/testkit")
}

// reportTestDocs reports exported names in non-test files whose doc comment says they
// are there for tests.
func reportTestDocs(pass *analysis.Pass) {
	check := func(id *ast.Ident, doc *ast.CommentGroup) {
		if id == nil || !id.IsExported() || doc == nil {
			return
		}
		if m := forTests.FindString(doc.Text()); m != "" {
			pass.Reportf(id.Pos(), "%s is documented as %q: a test hook in production code", id.Name, m)
		}
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f.Pos()) {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				check(d.Name, d.Doc)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						doc := s.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						for _, id := range s.Names {
							check(id, doc)
						}
					case *ast.TypeSpec:
						doc := s.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						check(s.Name, doc)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, id := range fl.Names {
									check(id, fl.Doc)
								}
							}
						}
					}
				}
			}
		}
	}
}

// sortedVars returns m's keys in source order, so reports come in a stable order.
func sortedVars(m map[*types.Var]token.Pos) []*types.Var {
	vs := make([]*types.Var, 0, len(m))
	for v := range m {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Pos() < vs[j].Pos() })
	return vs
}

// shortPos names pos by its file's base name and line.
func shortPos(pass *analysis.Pass, pos token.Pos) string {
	p := pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
