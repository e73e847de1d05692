package serialization_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/troupe-go/troupe/serialization"
)

// fuzzRegistry registers a spread of shapes: a struct with every kind of
// field, a pointer registration, and non-struct types.
func fuzzRegistry(tb testing.TB) *serialization.Registry {
	r := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[plain](r, "f.plain"),
		serialization.Register[*pointed](r, "f.pointed"),
		serialization.Register[string](r, "f.string"),
		serialization.Register[[]int](r, "f.ints"),
		serialization.Register[map[string]bool](r, "f.set"),
		serialization.Register[[]inner](r, "f.inners"),
	} {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// FuzzUnmarshal feeds arbitrary manifests and bytes to Unmarshal. It must
// never panic; every error must be classified; every success must be of the
// registered shape and encodable again.
func FuzzUnmarshal(f *testing.F) {
	r := fuzzRegistry(f)
	seeds := []any{
		plain{Name: "n", Count: 1 << 40, Data: []byte{0, 1}, Tags: []string{"t"},
			Attrs: map[string]int{"a": -1}, At: time.Unix(1700000000, 5).UTC(),
			Inner: &inner{X: 3}, List: []inner{{Y: "y"}}, Any: []any{1, "x", map[string]any{"k": 2.5}}},
		&pointed{N: -3},
		"text",
		[]int{1, 2, 3},
		map[string]bool{"on": true},
		[]inner{{X: 1}, {X: 2, Y: "b"}},
	}
	for _, v := range seeds {
		m, b, err := r.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m, b)
	}
	f.Add("f.plain", []byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add("nope", []byte{0xc0})

	want := map[string]reflect.Type{
		"f.plain":   reflect.TypeFor[plain](),
		"f.pointed": reflect.TypeFor[*pointed](),
		"f.string":  reflect.TypeFor[string](),
		"f.ints":    reflect.TypeFor[[]int](),
		"f.set":     reflect.TypeFor[map[string]bool](),
		"f.inners":  reflect.TypeFor[[]inner](),
	}
	f.Fuzz(func(t *testing.T, manifest string, data []byte) {
		v, err := r.Unmarshal(manifest, data)
		if err != nil {
			if !errors.Is(err, serialization.ErrUnknownManifest) && !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("unclassified error: %v", err)
			}
			if _, known := want[manifest]; known && errors.Is(err, serialization.ErrUnknownManifest) {
				t.Fatalf("registered manifest %q reported unknown", manifest)
			}
			return
		}
		wt, known := want[manifest]
		if !known {
			t.Fatalf("unknown manifest %q decoded to %T", manifest, v)
		}
		if got := reflect.TypeOf(v); got != wt {
			t.Fatalf("manifest %q decoded to %v, want %v", manifest, got, wt)
		}
		m2, _, err := r.Marshal(v)
		if err != nil || m2 != manifest {
			t.Fatalf("decoded value does not encode again: %q, %v", m2, err)
		}
	})
}
