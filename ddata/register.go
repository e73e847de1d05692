package ddata

import (
	"crypto/sha256"
	"errors"

	"github.com/troupe-go/troupe/serialization"
)

// RegisterTypes registers, in reg, the types of this package that need no type
// argument and the common instantiations of the generic ones, under the names
// below. Other instantiations are registered with the Register* functions (for
// example RegisterORSet[MyType](reg, "myapp.ORSet.MyType")), and a user's own CRDT
// with serialization.Register[*MyCRDT] (and its delta type, if it has one).
//
// Names (deltas add ".delta" to the value's name, as every Register* function
// does):
//
//	ddata.GCounter, ddata.PNCounter, ddata.Flag, ddata.VersionVector
//	ddata.Envelope (the replicator's own: a value with its pruning state)
//	ddata.GSet.{string,int,int64}, ddata.ORSet.{string,int,int64}
//	ddata.LWWRegister.{string,int,int64,bool,float64,bytes}
//	ddata.ORMap.string.{GCounter,PNCounter,Flag,ORSet.string,LWWRegister.string}
//	ddata.LWWMap.string.{string,int64,bytes}
//	ddata.PNCounterMap.string, ddata.ORMultiMap.string.string
//
// It returns the registration errors joined (each wrapping
// serialization.ErrDuplicate when called twice on one registry).
func RegisterTypes(reg *serialization.Registry) error {
	return errors.Join(
		serialization.Register[*GCounter](reg, "ddata.GCounter"),
		serialization.Register[*GCounterDelta](reg, "ddata.GCounter.delta"),
		serialization.Register[*PNCounter](reg, "ddata.PNCounter"),
		serialization.Register[*PNCounterDelta](reg, "ddata.PNCounter.delta"),
		serialization.Register[*Flag](reg, "ddata.Flag"),
		serialization.Register[*VersionVector](reg, "ddata.VersionVector"),
		serialization.Register[*envelopeWire](reg, envelopeManifest),

		RegisterGSet[string](reg, "ddata.GSet.string"),
		RegisterGSet[int](reg, "ddata.GSet.int"),
		RegisterGSet[int64](reg, "ddata.GSet.int64"),
		RegisterORSet[string](reg, "ddata.ORSet.string"),
		RegisterORSet[int](reg, "ddata.ORSet.int"),
		RegisterORSet[int64](reg, "ddata.ORSet.int64"),

		RegisterLWWRegister[string](reg, "ddata.LWWRegister.string"),
		RegisterLWWRegister[int](reg, "ddata.LWWRegister.int"),
		RegisterLWWRegister[int64](reg, "ddata.LWWRegister.int64"),
		RegisterLWWRegister[bool](reg, "ddata.LWWRegister.bool"),
		RegisterLWWRegister[float64](reg, "ddata.LWWRegister.float64"),
		RegisterLWWRegister[[]byte](reg, "ddata.LWWRegister.bytes"),

		RegisterORMap[string, *GCounter](reg, "ddata.ORMap.string.GCounter"),
		RegisterORMap[string, *PNCounter](reg, "ddata.ORMap.string.PNCounter"),
		RegisterORMap[string, *Flag](reg, "ddata.ORMap.string.Flag"),
		RegisterORMap[string, *ORSet[string]](reg, "ddata.ORMap.string.ORSet.string"),
		RegisterORMap[string, *LWWRegister[string]](reg, "ddata.ORMap.string.LWWRegister.string"),

		RegisterLWWMap[string, string](reg, "ddata.LWWMap.string.string"),
		RegisterLWWMap[string, int64](reg, "ddata.LWWMap.string.int64"),
		RegisterLWWMap[string, []byte](reg, "ddata.LWWMap.string.bytes"),
		RegisterPNCounterMap[string](reg, "ddata.PNCounterMap.string"),
		RegisterORMultiMap[string, string](reg, "ddata.ORMultiMap.string.string"),
	)
}

// RegisterGSet registers *GSet[E] under name and *GSetDelta[E] under name+".delta".
func RegisterGSet[E comparable](reg *serialization.Registry, name string) error {
	return registerPair[*GSet[E], *GSetDelta[E]](reg, name)
}

// RegisterORSet registers *ORSet[E] under name and *ORSetDelta[E] under
// name+".delta".
func RegisterORSet[E comparable](reg *serialization.Registry, name string) error {
	return registerPair[*ORSet[E], *ORSetDelta[E]](reg, name)
}

// RegisterLWWRegister registers *LWWRegister[T] under name (registers have no delta).
func RegisterLWWRegister[T any](reg *serialization.Registry, name string) error {
	return serialization.Register[*LWWRegister[T]](reg, name)
}

// RegisterORMap registers *ORMap[K, V] under name and *ORMapDelta[K, V] under
// name+".delta". V's own types need no registration: they are encoded inside.
func RegisterORMap[K comparable, V ReplicatedData](reg *serialization.Registry, name string) error {
	return registerPair[*ORMap[K, V], *ORMapDelta[K, V]](reg, name)
}

// RegisterLWWMap registers *LWWMap[K, V] under name and *LWWMapDelta[K, V] under
// name+".delta".
func RegisterLWWMap[K comparable, V any](reg *serialization.Registry, name string) error {
	return registerPair[*LWWMap[K, V], *LWWMapDelta[K, V]](reg, name)
}

// RegisterPNCounterMap registers *PNCounterMap[K] under name and
// *PNCounterMapDelta[K] under name+".delta".
func RegisterPNCounterMap[K comparable](reg *serialization.Registry, name string) error {
	return registerPair[*PNCounterMap[K], *PNCounterMapDelta[K]](reg, name)
}

// RegisterORMultiMap registers *ORMultiMap[K, V] under name and
// *ORMultiMapDelta[K, V] under name+".delta".
func RegisterORMultiMap[K, V comparable](reg *serialization.Registry, name string) error {
	return registerPair[*ORMultiMap[K, V], *ORMultiMapDelta[K, V]](reg, name)
}

func registerPair[T, D any](reg *serialization.Registry, name string) error {
	if err := serialization.Register[T](reg, name); err != nil {
		return err
	}
	return serialization.Register[D](reg, name+".delta")
}

// Digest identifies the content of a value: SHA-256 of its manifest and its
// deterministic encoding. Equal values of one type have equal digests on every
// node, so gossip compares digests instead of values.
type Digest [32]byte

// DigestOf encodes v with reg and returns its digest. It fails when v's type is
// not registered or cannot be encoded.
func DigestOf(reg *serialization.Registry, v ReplicatedData) (Digest, error) {
	manifest, data, err := reg.Marshal(v)
	if err != nil {
		return Digest{}, err
	}
	return DigestBytes(manifest, data), nil
}

// DigestBytes returns the digest of an encoded value and its manifest, for a
// caller that has encoded it already.
func DigestBytes(manifest string, data []byte) Digest {
	h := sha256.New()
	h.Write([]byte(manifest))
	h.Write([]byte{0})
	h.Write(data)
	var d Digest
	h.Sum(d[:0])
	return d
}
