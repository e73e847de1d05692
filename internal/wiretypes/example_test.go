package wiretypes_test

import (
	"fmt"
	"reflect"

	"github.com/troupe-go/troupe/internal/wiretypes"
)

// hello is one of a package's own messages between nodes.
type hello struct{ Seq uint64 }

// A Troupe package registers its wire types once, in an init function; every
// serialization.Registry then knows them.
func Example() {
	if err := wiretypes.Register[hello]("troupe.example.Hello"); err != nil {
		fmt.Println(err)
		return
	}
	name, _ := wiretypes.NameOf(reflect.TypeFor[*hello]())
	t, _ := wiretypes.Lookup(name)
	fmt.Println(name, t)
	// Output:
	// troupe.example.Hello wiretypes_test.hello
}
