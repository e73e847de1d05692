package serialization_test

import (
	"errors"
	"fmt"

	"github.com/troupe-go/troupe/serialization"
)

// Incremented is an event of a counter.
type Incremented struct {
	By int `msgpack:"by"`
}

func Example() {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*Incremented](reg, "counter.Incremented.v1"); err != nil {
		fmt.Println(err)
		return
	}

	manifest, data, err := reg.Marshal(&Incremented{By: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(manifest, len(data), "bytes")

	v, err := reg.Unmarshal(manifest, data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%T %+v\n", v, *v.(*Incremented))

	_, _, err = reg.Marshal("not registered")
	fmt.Println(errors.Is(err, serialization.ErrUnregistered))
	// Output:
	// counter.Incremented.v1 5 bytes
	// *serialization_test.Incremented {By:3}
	// true
}
