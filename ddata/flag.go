package ddata

import "github.com/vmihailenco/msgpack/v5"

// Flag is a boolean that starts false and, once switched on, stays on: a merge
// is true when either side is. Use it for one-way facts (a feature turned on, a
// job finished).
//
// The zero value is a Flag that is off.
type Flag struct {
	on bool
}

// NewFlag returns a Flag that is off.
func NewFlag() *Flag { return &Flag{} }

// SwitchOn turns the flag on.
func (f *Flag) SwitchOn() { f.on = true }

// Enabled reports whether the flag is on.
func (f *Flag) Enabled() bool { return f.on }

// Merge turns the flag on if o is on.
func (f *Flag) Merge(o *Flag) { f.on = f.on || o.on }

// Clone returns a copy.
func (f *Flag) Clone() *Flag { return &Flag{on: f.on} }

// MergeData merges a *Flag.
func (f *Flag) MergeData(other ReplicatedData) error {
	o, ok := other.(*Flag)
	if !ok || o == nil {
		return mismatch("*Flag", other)
	}
	f.Merge(o)
	return nil
}

// CloneData returns Clone.
func (f *Flag) CloneData() ReplicatedData { return f.Clone() }

// EncodeMsgpack writes a bool.
func (f *Flag) EncodeMsgpack(enc *msgpack.Encoder) error { return enc.EncodeBool(f.on) }

// DecodeMsgpack reads a bool.
func (f *Flag) DecodeMsgpack(dec *msgpack.Decoder) error {
	on, err := dec.DecodeBool()
	if err != nil {
		return err
	}
	f.on = on
	return nil
}
