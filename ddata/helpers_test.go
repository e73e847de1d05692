package ddata

import (
	"bytes"
	"slices"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
)

var (
	n1 = cluster.UniqueAddress{Addr: "10.0.0.1:2552", UID: 11}
	n2 = cluster.UniqueAddress{Addr: "10.0.0.2:2552", UID: 22}
	n3 = cluster.UniqueAddress{Addr: "10.0.0.3:2552", UID: 33}
	n4 = cluster.UniqueAddress{Addr: "10.0.0.4:2552", UID: 44}
	n5 = cluster.UniqueAddress{Addr: "10.0.0.5:2552", UID: 55}
)

// dg returns a digest that stands for a value.
func dg(b byte) Digest { return Digest{0: b, 1: 1} }

// t0 is a fixed time for the pure types' tests.
var t0 = time.Unix(1_700_000_000, 0)

var testNodes = []cluster.UniqueAddress{n1, n2, n3, n4, n5}

// tHelper is what the helpers need of *testing.T and *rapid.T.
type tHelper interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// testRegistry returns a registry with the package's types and the test types.
func testRegistry(tb tHelper) *serialization.Registry {
	tb.Helper()
	reg := serialization.NewRegistry()
	if err := RegisterTypes(reg); err != nil {
		tb.Fatal(err)
	}
	return reg
}

// encodeOf returns v's encoding, failing the test on error.
func encodeOf(tb tHelper, reg *serialization.Registry, v any) []byte {
	tb.Helper()
	_, b, err := reg.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %T: %v", v, err)
	}
	return b
}

// sameState fails the test unless a and b encode alike.
func sameState(tb tHelper, reg *serialization.Registry, what string, a, b any) {
	tb.Helper()
	ea, eb := encodeOf(tb, reg, a), encodeOf(tb, reg, b)
	if !bytes.Equal(ea, eb) {
		tb.Fatalf("%s: states differ:\n%x\n%x", what, ea, eb)
	}
}

// roundTrip encodes v, decodes it, and returns the decoded value.
func roundTrip(tb tHelper, reg *serialization.Registry, v any) any {
	tb.Helper()
	m, b, err := reg.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %T: %v", v, err)
	}
	out, err := reg.Unmarshal(m, b)
	if err != nil {
		tb.Fatalf("unmarshal %s: %v", m, err)
	}
	return out
}

func sortedInts(s []int) []int {
	slices.Sort(s)
	return s
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}
