package doccheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// block is one fenced Go block of a page.
type block struct {
	page string
	line int // of the first line of code
	code string
}

// knownPackages maps the package names doc blocks use to their import paths.
var knownPackages = map[string]string{
	"actor":         "github.com/troupe-go/troupe/actor",
	"mailbox":       "github.com/troupe-go/troupe/mailbox",
	"supervision":   "github.com/troupe-go/troupe/supervision",
	"serialization": "github.com/troupe-go/troupe/serialization",
	"remote":        "github.com/troupe-go/troupe/remote",
	"cluster":       "github.com/troupe-go/troupe/cluster",
	"member":        "github.com/troupe-go/troupe/member",
	"discovery":     "github.com/troupe-go/troupe/discovery",
	"persistence":   "github.com/troupe-go/troupe/persistence",
	"badgerjournal": "github.com/troupe-go/troupe/persistence/badgerjournal",
	"memjournal":    "github.com/troupe-go/troupe/persistence/memjournal",
	"journaltest":   "github.com/troupe-go/troupe/persistence/journaltest",
	"testkit":       "github.com/troupe-go/troupe/testkit",
	"multinode":     "github.com/troupe-go/troupe/testkit/multinode",
	"lease":         "github.com/troupe-go/troupe/lease",
	"singleton":     "github.com/troupe-go/troupe/singleton",
	"ddata":         "github.com/troupe-go/troupe/ddata",
	"sharding":      "github.com/troupe-go/troupe/sharding",
	"pgjournal":     "github.com/troupe-go/troupe/persistence/pgjournal",
	"pglease":       "github.com/troupe-go/troupe/lease/pglease",
	"management":    "github.com/troupe-go/troupe/management",
	"zap":           "go.uber.org/zap",
	"prometheus":    "github.com/prometheus/client_golang/prometheus",
	"promhttp":      "github.com/prometheus/client_golang/prometheus/promhttp",
	"otelprom":      "go.opentelemetry.io/otel/exporters/prometheus",
	"sdkmetric":     "go.opentelemetry.io/otel/sdk/metric",
	"sdktrace":      "go.opentelemetry.io/otel/sdk/trace",
	"http":          "net/http",
	"context":       "context",
	"errors":        "errors",
	"fmt":           "fmt",
	"log":           "log",
	"slog":          "log/slog",
	"os":            "os",
	"strings":       "strings",
	"sync":          "sync",
	"testing":       "testing",
	"time":          "time",
	"tls":           "crypto/tls",
}

// conventional names are declared for a block that uses them without declaring them.
var conventional = map[string]string{
	"sys":   "*actor.System",
	"ref":   "actor.Ref",
	"self":  "actor.Ref",
	"probe": "*testkit.Probe",
	"reg":   "*serialization.Registry",
	"t":     "*testing.T",
}

func TestDocsTypeCheck(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	var blocks []block
	for _, p := range pages {
		bs, err := readBlocks(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatal("no Go blocks found: the docs moved?")
	}
	imp, err := exportImporter(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		rel, _ := filepath.Rel(root, b.page)
		if errs := check(b, imp); len(errs) > 0 {
			t.Errorf("%s:%d: the Go block does not type-check:\n\t%s\n%s", rel, b.line, strings.Join(errs, "\n\t"), b.code)
		}
	}
	t.Logf("%d Go blocks checked in %d pages", len(blocks), len(pages))
}

var fence = regexp.MustCompile("^```(\\w*)\\s*$")

// readBlocks returns the ```go blocks of a Markdown page.
func readBlocks(page string) ([]block, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var out []block
	sc := bufio.NewScanner(bytes.NewReader(data))
	var cur *block
	var buf strings.Builder
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil && m[1] == "go":
			cur = &block{page: page, line: n + 1}
			buf.Reset()
		case cur == nil && m != nil && m[1] != "":
			cur = &block{} // another language: skipped
		case cur != nil && m != nil && m[1] == "":
			if cur.page != "" {
				cur.code = buf.String()
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			buf.WriteString(line)
			buf.WriteByte('\n')
		}
	}
	return out, sc.Err()
}

// exportImporter returns an importer reading the compiler's export data of the
// module's packages and the standard library, as listed by go list.
func exportImporter(root string) (types.Importer, error) {
	var paths []string
	for _, p := range knownPackages {
		if _, err := os.Stat(filepath.Join(root, strings.TrimPrefix(p, "github.com/troupe-go/troupe/"))); strings.HasPrefix(p, "github.com/troupe-go/troupe/") && err != nil {
			continue // a package that does not exist yet
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, paths...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	}), nil
}

// check type-checks one block and returns the errors that matter.
func check(b block, imp types.Importer) []string {
	src, err := assemble(b.code, nil)
	if err != nil {
		return []string{err.Error()}
	}
	errs, undefined := typeCheck(src, imp)
	var extra []string
	slices.Sort(undefined)
	for _, name := range slices.Compact(undefined) {
		if typ, ok := conventional[name]; ok {
			extra = append(extra, fmt.Sprintf("var %s %s", name, typ))
		}
	}
	if len(extra) > 0 {
		if src, err = assemble(b.code, extra); err != nil {
			return []string{err.Error()}
		}
		errs, _ = typeCheck(src, imp)
	}
	return errs
}

// assemble turns a block into a file: declarations at the top level, statements in a
// function, with the packages it uses imported and the extra declarations added.
func assemble(code string, extra []string) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(code), "package ") {
		return code, nil
	}
	decls, stmts := split(code)
	var f strings.Builder
	f.WriteString("package doc\n\n")
	for _, name := range usedPackages(code) {
		fmt.Fprintf(&f, "import %s %q\n", name, knownPackages[name])
	}
	f.WriteString(decls)
	for _, e := range extra {
		f.WriteString(e + "\n")
	}
	if strings.TrimSpace(stmts) != "" {
		f.WriteString("\nfunc _() {\n" + stmts + "\n}\n")
	}
	src := f.String()
	if _, err := parser.ParseFile(token.NewFileSet(), "doc.go", src, 0); err != nil {
		return "", fmt.Errorf("parse: %v", err)
	}
	return src, nil
}

var topLevel = regexp.MustCompile(`^(func|type|var|const|import)\b`)

// split separates top-level declarations (starting at column 0 with func, type, var,
// const or import, up to the end of their braces or parentheses) from statements.
func split(code string) (decls, stmts string) {
	var d, s strings.Builder
	depth := 0
	inDecl := false
	for _, line := range strings.SplitAfter(code, "\n") {
		if depth == 0 {
			inDecl = topLevel.MatchString(line) || (inDecl && strings.HasPrefix(line, "//"))
			if strings.HasPrefix(line, "//") && !inDecl {
				inDecl = false
			}
		}
		depth += strings.Count(line, "{") + strings.Count(line, "(") - strings.Count(line, "}") - strings.Count(line, ")")
		if depth < 0 {
			depth = 0
		}
		if inDecl {
			d.WriteString(line)
		} else {
			s.WriteString(line)
		}
	}
	return d.String(), s.String()
}

var qualified = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z_]`)

// usedPackages returns the known packages a block refers to and does not import
// itself.
func usedPackages(code string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range qualified.FindAllStringSubmatch(code, -1) {
		name := m[1]
		if _, ok := knownPackages[name]; ok && !seen[name] && !strings.Contains(code, `"`+knownPackages[name]+`"`) {
			seen[name] = true
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// typeCheck returns the type errors that matter, and the names used but not declared.
func typeCheck(src string, imp types.Importer) (errs, undefined []string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc.go", src, 0)
	if err != nil {
		return []string{err.Error()}, nil
	}
	conf := types.Config{Importer: imp, Error: func(err error) {
		te, ok := err.(types.Error)
		if !ok {
			errs = append(errs, err.Error())
			return
		}
		msg := te.Msg
		switch {
		case strings.HasPrefix(msg, "undefined: ") && !strings.Contains(msg, "."):
			undefined = append(undefined, strings.TrimPrefix(msg, "undefined: "))
		case strings.Contains(msg, "declared and not used"),
			strings.Contains(msg, "imported and not used"),
			strings.HasPrefix(msg, "missing return"),
			strings.Contains(msg, "is not used"):
		default:
			errs = append(errs, fmt.Sprintf("line %d: %s", fset.Position(te.Pos).Line, msg))
		}
	}}
	_, _ = conf.Check("doc", fset, []*ast.File{f}, nil)
	return errs, undefined
}
