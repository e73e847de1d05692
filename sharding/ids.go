package sharding

import (
	"strconv"
	"strings"

	"github.com/troupe-go/troupe/sharding/placement"
)

// ShardID names a shard: a group of entities that live, move and stop together. It
// is placement.ShardID, where allocation strategies find it.
type ShardID = placement.ShardID

// EntityID names one entity within its entity type. It is placement.EntityID.
type EntityID = placement.EntityID

// RegionID identifies a shard region (or a proxy-only region) to the sharding cores and
// to allocation strategies. It is placement.RegionID (see there).
type RegionID = placement.RegionID

// nodeAddress returns the node part of a region's path: everything before the path,
// such as "troupe://sys@10.0.0.5:2552", which is what cluster.UniqueAddress.Addr holds
// for that node. An ID without a scheme yields "".
func nodeAddress(r RegionID) string {
	s := string(r)
	i := strings.Index(s, "://")
	if i < 0 {
		return ""
	}
	if j := strings.IndexByte(s[i+3:], '/'); j >= 0 {
		return s[:i+3+j]
	}
	if j := strings.IndexByte(s[i+3:], '#'); j >= 0 {
		return s[:i+3+j]
	}
	return s
}

// compareAppVersion orders two application versions, as semantic versions are ordered:
// the dot-separated numeric parts numerically ("1.10" after "1.9", missing parts are 0,
// so "1.0" equals "1.0.0"), then a version without a qualifier after one with it
// ("1.2.3" after "1.2.3-RC1"), then qualifiers as strings. A part that is not a number
// is compared as a string and after every number. The empty version is "0". It
// returns -1, 0 or +1.
func compareAppVersion(a, b string) int {
	if a == b {
		return 0
	}
	an, aq := splitQualifier(a)
	bn, bq := splitQualifier(b)
	ap, bp := strings.Split(an, "."), strings.Split(bn, ".")
	for i := 0; i < len(ap) || i < len(bp); i++ {
		x, y := "0", "0"
		if i < len(ap) && ap[i] != "" {
			x = ap[i]
		}
		if i < len(bp) && bp[i] != "" {
			y = bp[i]
		}
		if c := comparePart(x, y); c != 0 {
			return c
		}
	}
	switch {
	case aq == bq:
		return 0
	case aq == "":
		return 1
	case bq == "":
		return -1
	}
	return strings.Compare(aq, bq)
}

// splitQualifier splits "1.2.3-RC1" into "1.2.3" and "RC1" (also at '+').
func splitQualifier(v string) (numbers, qualifier string) {
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		return v[:i], v[i+1:]
	}
	return v, ""
}

// comparePart compares two version parts: numbers numerically, numbers before
// non-numbers, non-numbers as strings.
func comparePart(x, y string) int {
	nx, errx := strconv.ParseUint(x, 10, 64)
	ny, erry := strconv.ParseUint(y, 10, 64)
	switch {
	case errx == nil && erry == nil:
		switch {
		case nx < ny:
			return -1
		case nx > ny:
			return 1
		}
		return 0
	case errx == nil:
		return -1
	case erry == nil:
		return 1
	}
	return strings.Compare(x, y)
}
