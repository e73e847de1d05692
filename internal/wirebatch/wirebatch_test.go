package wirebatch

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestPosition(t *testing.T) {
	table := []string{"a", "b", "a"}
	for _, c := range []struct {
		last int
		v    string
		want int
	}{
		{2, "a", 2}, // the last one first
		{1, "a", 0}, // else the first in order
		{0, "b", 1},
		{0, "c", -1},
		{5, "b", 1}, // a last out of range is not looked at
	} {
		if got := Position(table, c.last, c.v); got != c.want {
			t.Errorf("Position(%v, %d, %q) = %d, want %d", table, c.last, c.v, got, c.want)
		}
	}
	if got := Position[string](nil, 0, "a"); got != -1 {
		t.Errorf("Position in an empty table = %d", got)
	}
}

func TestReadBytes(t *testing.T) {
	var enc bytes.Buffer
	e := msgpack.NewEncoder(&enc)
	for _, b := range [][]byte{[]byte("hello"), make([]byte, 300), {}} {
		if err := e.EncodeBytes(b); err != nil {
			t.Fatal(err)
		}
	}
	dec := msgpack.NewDecoder(bytes.NewReader(enc.Bytes()))
	buf := make([]byte, 0, 64)
	got, err := ReadBytes(dec, buf)
	if err != nil || string(got) != "hello" || &got[:1][0] != &buf[:1][0] {
		t.Fatalf("ReadBytes = %q, %v; want hello in the buffer given", got, err)
	}
	if got, err = ReadBytes(dec, buf); err != nil || len(got) != 300 {
		t.Fatalf("ReadBytes = %d bytes, %v; want 300 in a new array", len(got), err)
	}
	if got, err = ReadBytes(dec, buf); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ReadBytes = %v, %v; want an empty byte string", got, err)
	}
	if _, err = ReadBytes(dec, buf); err == nil {
		t.Fatal("ReadBytes past the end succeeded")
	}
	if got, err = ReadBytes(msgpack.NewDecoder(bytes.NewReader([]byte{0xc0})), buf); err != nil || len(got) != 0 {
		t.Fatalf("ReadBytes of nil = %v, %v; want an empty byte string", got, err)
	}
}

func TestReadBytesRejectsMalformed(t *testing.T) {
	for name, data := range map[string][]byte{
		"a number":   {0x01},
		"too long":   {0xc6, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3},
		"cut short":  {0xc4, 5, 1, 2},
		"no element": {},
	} {
		if got, err := ReadBytes(msgpack.NewDecoder(bytes.NewReader(data)), nil); err == nil {
			t.Errorf("%s: ReadBytes = %v, want an error", name, got)
		}
	}
}

func TestLimitStaysWithinOneFrame(t *testing.T) {
	for _, c := range []struct{ frame, limit, want int }{
		{256 << 10, 32 << 10, 32 << 10}, // the default frame holds a whole batch
		{16 << 10, 32 << 10, 15 << 10},  // all but the frame's own fields
		{1 << 10, 32 << 10, 512},        // the smallest frame: half of it
	} {
		if got := Limit(c.frame, c.limit); got != c.want {
			t.Errorf("Limit(%d, %d) = %d, want %d", c.frame, c.limit, got, c.want)
		}
	}
}
