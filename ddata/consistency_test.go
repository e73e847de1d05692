package ddata

import (
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/internal/replication"
)

func TestMajorityFormula(t *testing.T) {
	// min(N, max(N/2+1+additional, minCap)), minCap 5, N = 3..12.
	want := []int{3, 4, 5, 5, 5, 5, 5, 6, 6, 7}
	for i, w := range want {
		n := i + 3
		if got := replication.MajorityOf(n, 0, 5); got != w {
			t.Errorf("majority(%d, minCap 5) = %d, want %d", n, got, w)
		}
		if got := ReadMajority(time.Second, 5).Required(n); got != w {
			t.Errorf("ReadMajority.Required(%d) = %d, want %d", n, got, w)
		}
	}
	cases := []struct {
		name string
		c    WriteConsistency
		n    int
		want int
	}{
		{"local", WriteLocal(), 7, 1},
		{"to 3 of 7", WriteTo(3, time.Second), 7, 3},
		{"to 3 of 2 asks for 3", WriteTo(3, time.Second), 2, 3},
		{"majority of 1 acts local", WriteMajority(time.Second, 0), 1, 1},
		{"majority of 2", WriteMajority(time.Second, 0), 2, 2},
		{"majority of 4", WriteMajority(time.Second, 0), 4, 3},
		{"majority of 5", WriteMajority(time.Second, 0), 5, 3},
		{"plus 3 of 10", WriteMajorityPlus(time.Second, 3, 0), 10, 9},
		{"plus 3 of 4", WriteMajorityPlus(time.Second, 3, 0), 4, 4},
		{"plus 3 minCap 5 of 20", WriteMajorityPlus(time.Second, 3, 5), 20, 14},
		{"all of 6", WriteAll(time.Second), 6, 6},
		{"all of 1", WriteAll(time.Second), 1, 1},
	}
	for _, c := range cases {
		if got := c.c.Required(c.n); got != c.want {
			t.Errorf("%s: Required(%d) = %d, want %d", c.name, c.n, got, c.want)
		}
	}
}

func TestConsistencyValidate(t *testing.T) {
	bad := []interface{ Validate() error }{
		ReadFrom(1, time.Second),
		WriteTo(0, time.Second),
		ReadMajority(0, 0),
		WriteMajorityPlus(time.Second, -1, 0),
		ReadAll(-time.Second),
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConsistency) {
			t.Errorf("%v: Validate = %v", c, err)
		}
	}
	good := []interface{ Validate() error }{
		ReadLocal(), WriteLocal(), ReadConsistency{}, WriteConsistency{},
		ReadFrom(2, time.Second), WriteMajority(time.Second, 5), ReadAll(time.Second),
	}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	if s := WriteMajorityPlus(3*time.Second, 3, 5).String(); s != "WriteMajorityPlus(3s, +3, minCap 5)" {
		t.Errorf("String = %q", s)
	}
}
