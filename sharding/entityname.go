package sharding

import (
	"strings"

	"github.com/troupe-go/troupe/actor"
)

// An entity actor is named after its entity ID, so that its path shows which entity it
// is (/system/sharding/<type>/<shard>/<entity>). Actor names allow letters, digits and
// "-_.:@+=" plus '~'; every other byte of an ID, and '~' itself, is written as '~'
// followed by two upper-case hex digits. Shard actors are named the same way after
// their shard ID. The encoding is reversible and never starts with '$' (anonymous
// actors), so an entity name never clashes with the shard's own helpers.

const hexDigits = "0123456789ABCDEF"

// plainNameByte reports whether b stands for itself in an encoded name.
func plainNameByte(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("-_.:@+=", b) >= 0
}

// encodeName turns an entity or shard ID into an actor name. It returns "" for "".
func encodeName(id string) string {
	plain := true
	for i := 0; i < len(id); i++ {
		if !plainNameByte(id[i]) {
			plain = false
			break
		}
	}
	if plain {
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + 8)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if plainNameByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('~')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// decodeName reverses encodeName; ok is false for a name encodeName cannot produce.
func decodeName(name string) (string, bool) {
	if strings.IndexByte(name, '~') < 0 {
		for i := 0; i < len(name); i++ {
			if !plainNameByte(name[i]) {
				return "", false
			}
		}
		return name, true
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '~' {
			if !plainNameByte(c) {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		hi, lo := unhex(name[i+1]), unhex(name[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		v := byte(hi<<4 | lo)
		if plainNameByte(v) {
			return "", false // not canonical: encodeName writes it plain
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// EntityIDOf returns the ID of the entity whose context ctx is: the ID its shard
// started it for. It returns "" for an actor that is not a sharded entity (one whose
// name is not an encoded entity ID). A factory (EntityConfig.EntityFactory) receives
// the ID too.
func EntityIDOf(ctx actor.InfoContext) EntityID {
	id, ok := decodeName(ctx.Self().Name())
	if !ok {
		return ""
	}
	return EntityID(id)
}
