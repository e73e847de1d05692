package shardcore

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// NodeAddress returns the node part of a region's path: everything before the path,
// such as "troupe://sys@10.0.0.5:2552", which is what cluster.UniqueAddress.Addr holds
// for that node. An ID without a scheme yields "".
func NodeAddress(r placement.RegionID) string {
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

// leaving reports whether a member is on its way out of the member.
func leaving(n placement.NodeInfo) bool {
	return n.Status == member.Leaving || n.Status == member.Exiting || n.Status == member.Down ||
		n.Status == member.Removed
}

// compareRegions is the order in which regions are preferred as a shard's home, best
// first: regions of members that are not leaving (Leaving, Exiting, Down); a higher app
// version; fewer shards; an older member (lower up number; no age is youngest); a lower
// member address; and, to make the order total, a lower region ID.
func compareRegions(a, b placement.RegionInfo) int {
	if la, lb := leaving(a.Node), leaving(b.Node); la != lb {
		if la {
			return 1
		}
		return -1
	}
	if c := compareAppVersion(a.Node.AppVersion, b.Node.AppVersion); c != 0 {
		return -c
	}
	if c := cmp.Compare(len(a.Shards), len(b.Shards)); c != 0 {
		return c
	}
	ua, ub := a.Node.UpNumber, b.Node.UpNumber
	switch {
	case ua > 0 && ub <= 0:
		return -1
	case ua <= 0 && ub > 0:
		return 1
	case ua != ub:
		return cmp.Compare(ua, ub)
	}
	if c := a.Node.Address.Compare(b.Node.Address); c != 0 {
		return c
	}
	return cmp.Compare(a.Region, b.Region)
}

// sortRegions returns the regions in preference order (compareRegions), in a new slice.
func sortRegions(regions []placement.RegionInfo) []placement.RegionInfo {
	out := slices.Clone(regions)
	slices.SortFunc(out, compareRegions)
	return out
}
