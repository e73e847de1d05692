package main

import (
	"bytes"
	"regexp"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo, as `go run ./examples/guide` runs it: three nodes, accounts opened and
// used, the oldest leaves, and every balance, number and count is what it must be.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := demo(&out, zaptest.NewLogger(t)); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{
		`1\. three nodes are Up, sharing a badger journal; bank-\d is the oldest`,
		`bank-0 opened account 1001 for ann`,
		`bank-1 opened account 1002 for bob`,
		`bank-2 opened account 1003 for cho`,
		`bank-1: deposit 100 on 1001: balance 100\n`,
		`bank-2: withdraw 30 on 1001: balance 70\n`,
		`bank-0: withdraw 80 on 1002: rejected: insufficient funds\n`,
		`counted on every node in distributed data: 4\n`,
		`bank-\d, the oldest, leaves gracefully`,
		`opened account 1004 for dan: the new allocator recovered`,
		`account 1001 of ann: balance 70, intact`,
		`account 1002 of bob: balance 50, intact`,
		`account 1003 of cho: balance 70, intact`,
		`transactions counted: 5\n`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
