package archlint_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/internal/archlint"
	"golang.org/x/tools/go/analysis/analysistest"
)

const module = archlint.Module

func TestNoInternalImport(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), archlint.NoInternalImport,
		module+"/examples/demo", module+"/testkit/kit", module+"/testkit/kit/internal/own", module+"/internal/notcore")
}

func TestPureCore(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), archlint.PureCore, module+"/internal/core", module+"/internal/notcore")
}

// TestNoTestHook checks the test variant of testdata's hook package: the package alone
// has no test files, so what the analyzer finds there differs, and analysistest's want
// comments, checked against both variants, cannot say it.
func TestNoTestHook(t *testing.T) {
	var discard collector
	results := analysistest.Run(&discard, analysistest.TestData(), archlint.NoTestHook, module+"/hook")
	var got []string
	for _, r := range results {
		if !strings.HasSuffix(r.Action.Package.ID, ".test]") {
			continue
		}
		for _, d := range r.Action.Diagnostics {
			pos := r.Action.Package.Fset.Position(d.Pos)
			got = append(got, fmt.Sprintf("%s:%d: %s", filepath.Base(pos.Filename), pos.Line, d.Message))
		}
	}
	sort.Strings(got) // by file and line, as text
	want := []string{
		`hook.go:11: field onSend is written only by tests`,
		`hook.go:14: field internal is written only by tests`,
		`hook.go:18: Reset is documented as "used only by tests"`,
		`hook.go:4: package variable override is assigned by a test`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("diagnostic %d is %q, want %q...", i, got[i], want[i])
		}
	}
}

// collector is an analysistest.Testing that keeps what it is told.
type collector struct{ errs []string }

func (c *collector) Errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}
