package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every Go block of docs/guide.md is the program's code: its lines (trimmed) appear, in
// order and together, in one of the package's files. A block preceded by a line
// starting with "<!-- not in examples/guide" is exempt.
func TestGuideBlocksAreTheProgram(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var sources [][]string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, trimmedLines(string(data)))
	}
	blocks, err := guideBlocks(filepath.Join("..", "..", "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 8 {
		t.Fatalf("%d Go blocks in docs/guide.md: the guide moved?", len(blocks))
	}
	for _, b := range blocks {
		lines := trimmedLines(b.code)
		found := false
		for _, src := range sources {
			if contains(src, lines) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/guide.md:%d: the Go block is not the program's code:\n%s", b.line, b.code)
		}
	}
}

type guideBlock struct {
	line int
	code string
}

// guideBlocks returns the Go blocks of the page that are not exempt.
func guideBlocks(page string) ([]guideBlock, error) {
	f, err := os.Open(page)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []guideBlock
	var cur *guideBlock
	var code strings.Builder
	exempt, inOther := false, false
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && !inOther && strings.TrimSpace(line) == "```go":
			if !exempt {
				cur = &guideBlock{line: n + 1}
				code.Reset()
			} else {
				inOther = true
			}
		case cur == nil && !inOther && strings.HasPrefix(line, "```"):
			inOther = true
		case inOther && strings.TrimSpace(line) == "```":
			inOther = false
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.code = code.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line + "\n")
		}
		if cur == nil && !inOther {
			exempt = strings.HasPrefix(line, "<!-- not in examples/guide")
		}
	}
	return out, sc.Err()
}

// trimmedLines returns the non-empty lines of s, trimmed.
func trimmedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// contains reports whether part appears in whole, in order and together.
func contains(whole, part []string) bool {
	for i := 0; i+len(part) <= len(whole); i++ {
		j := 0
		for j < len(part) && whole[i+j] == part[j] {
			j++
		}
		if j == len(part) {
			return true
		}
	}
	return false
}
