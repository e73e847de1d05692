package membership

import (
	"errors"
	"fmt"
	"github.com/troupe-go/troupe/member"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The serf tag keys a Troupe member publishes. Keys not listed here are ignored by
// DecodeTags, so a node may carry tags of its own and a newer version may add keys
// older nodes skip; a change that older nodes would misread bumps TagsVersion.
const (
	// TagVersion holds the tags format version, TagsVersion in decimal.
	TagVersion = "troupe.v"
	// TagAddr holds the member's remote address (UniqueAddress.Addr).
	TagAddr = "troupe.addr"
	// TagUID holds the member's incarnation uid in decimal.
	TagUID = "troupe.uid"
	// TagStatus holds the status the member reports for itself: joining, up, leaving,
	// exiting or down.
	TagStatus = "troupe.status"
	// TagAge holds the member's UpNumber in decimal; 0 until it is Up.
	TagAge = "troupe.age"
	// TagRoles holds the member's roles, sorted, separated by commas; empty for none.
	TagRoles = "troupe.roles"
	// TagAppVersion holds the member's application version; empty when unset.
	TagAppVersion = "troupe.app"
	// TagCluster holds the identity of the cluster the member belongs to, drawn by the
	// member that formed it. It is absent while the member still looks for a cluster
	// to join; DecodeTags leaves it to ClusterOf.
	TagCluster = "troupe.cluster"
	// TagWelcome, present (with the value "1"), says the member takes part in the
	// welcome exchange by which a joining member waits for convergence before it moves
	// itself Up, and in the notice by which it then says it is Up. Members of Troupe
	// v0.1.0 do not publish it and do not speak either message: a joining member does
	// not wait for them nor send them the notice.
	TagWelcome = "troupe.welcome"
)

// MaxClusterIDSize is the longest cluster identity EncodeTagsIn and ClusterOf accept.
const MaxClusterIDSize = 64

// TagsVersion is the version of the tags format that EncodeTags writes and DecodeTags
// reads.
const TagsVersion = 1

// MaxTagsSize is the most bytes serf lets a member's encoded tags take (memberlist's
// metadata limit). EncodeTags refuses tags that would not fit.
const MaxTagsSize = 512

// MaxUpNumber is the largest age DecodeTags accepts, far above any clock in
// milliseconds, so that NextUpNumber never overflows.
const MaxUpNumber = 1 << 62

var (
	// ErrMalformedTags is returned by DecodeTags for tags that are missing a key or hold
	// a value that does not parse; the error names the key and the value.
	ErrMalformedTags = errors.New("cluster: malformed member tags")
	// ErrTagsVersion is returned by DecodeTags for tags of a version it does not know.
	ErrTagsVersion = errors.New("cluster: unsupported member tags version")
	// ErrTagsTooLarge is returned by EncodeTags when the tags exceed MaxTagsSize.
	ErrTagsTooLarge = errors.New("cluster: member tags too large")
)

// tagStatusNames maps statuses to their tag spelling; Removed is never published.
var tagStatusNames = map[member.MemberStatus]string{
	member.Joining: "joining", member.Up: "up", member.Leaving: "leaving", member.Exiting: "exiting", member.Down: "down",
}

// EncodeTags returns the serf tags that describe m, or an error if m is not well formed
// (as Membership requires), is Removed, has a role that is not a plain name (see
// DecodeTags), or does not fit in MaxTagsSize. DecodeTags(EncodeTags(m)) returns m.
func EncodeTags(m member.Member) (map[string]string, error) {
	if err := validateMember(m); err != nil {
		return nil, err
	}
	status, ok := tagStatusNames[m.Status]
	if !ok {
		return nil, fmt.Errorf("%w: status %s is not published in tags", ErrInvalidMember, m.Status)
	}
	if err := checkText(m.Unique.Addr, false); err != nil {
		return nil, fmt.Errorf("%w: address %q %v", ErrInvalidMember, m.Unique.Addr, err)
	}
	if m.UpNumber > MaxUpNumber {
		return nil, fmt.Errorf("%w: age %d above %d", ErrInvalidMember, m.UpNumber, int64(MaxUpNumber))
	}
	for _, r := range m.Roles {
		if err := CheckRole(r); err != nil {
			return nil, fmt.Errorf("%w: role %q %v", ErrInvalidMember, r, err)
		}
	}
	if err := checkText(m.AppVersion, true); err != nil {
		return nil, fmt.Errorf("%w: app version %q %v", ErrInvalidMember, m.AppVersion, err)
	}
	tags := map[string]string{
		TagVersion:    strconv.Itoa(TagsVersion),
		TagAddr:       m.Unique.Addr,
		TagUID:        strconv.FormatUint(m.Unique.UID, 10),
		TagStatus:     status,
		TagAge:        strconv.FormatInt(m.UpNumber, 10),
		TagRoles:      strings.Join(m.Roles, ","),
		TagAppVersion: m.AppVersion,
		TagWelcome:    "1",
	}
	if n := encodedSize(tags); n > MaxTagsSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTagsTooLarge, n, MaxTagsSize)
	}
	return tags, nil
}

// SpeaksWelcome reports whether the member with these tags takes part in the welcome
// exchange (see TagWelcome).
func SpeaksWelcome(tags map[string]string) bool { return tags[TagWelcome] == "1" }

// EncodeTagsIn is EncodeTags for a member of the cluster with identity cluster ("" for
// a member that has not joined one yet).
func EncodeTagsIn(m member.Member, cluster string) (map[string]string, error) {
	tags, err := EncodeTags(m)
	if err != nil || cluster == "" {
		return tags, err
	}
	if err := checkClusterID(cluster); err != nil {
		return nil, fmt.Errorf("%w: cluster identity %q %v", ErrInvalidMember, cluster, err)
	}
	tags[TagCluster] = cluster
	if n := encodedSize(tags); n > MaxTagsSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTagsTooLarge, n, MaxTagsSize)
	}
	return tags, nil
}

// ClusterOf returns the identity of the cluster the member with these tags belongs to:
// "" when it has not joined one yet, ErrMalformedTags when the identity is not text of
// at most MaxClusterIDSize bytes.
func ClusterOf(tags map[string]string) (string, error) {
	id := tags[TagCluster]
	if err := checkClusterID(id); err != nil {
		return "", fmt.Errorf("%w: %s %q: %v", ErrMalformedTags, TagCluster, id, err)
	}
	return id, nil
}

func checkClusterID(id string) error {
	if len(id) > MaxClusterIDSize {
		return fmt.Errorf("is longer than %d bytes", MaxClusterIDSize)
	}
	return checkText(id, true)
}

// encodedSize returns the size of tags as serf encodes them (a marker byte, then a
// msgpack map of strings).
func encodedSize(tags map[string]string) int {
	n := 1 + 1 // marker, fixmap header
	if len(tags) >= 16 {
		n += 2
	}
	str := func(s string) int {
		switch l := len(s); {
		case l < 32:
			return 1 + l
		case l < 256:
			return 2 + l
		case l < 65536:
			return 3 + l
		default:
			return 5 + l
		}
	}
	for k, v := range tags {
		n += str(k) + str(v)
	}
	return n
}

// DecodeTags reads a member from its serf tags. The member's status is the one it
// reports for itself. It never panics; for tags that are not a valid encoding it returns
// ErrTagsVersion (a version other than TagsVersion) or ErrMalformedTags naming the key.
// Only the canonical form EncodeTags writes is accepted: decimal numbers without sign
// or leading zeros, roles sorted without duplicates, text without control characters.
func DecodeTags(tags map[string]string) (member.Member, error) {
	get := func(key string) (string, error) {
		v, ok := tags[key]
		if !ok {
			return "", fmt.Errorf("%w: no %s", ErrMalformedTags, key)
		}
		return v, nil
	}
	bad := func(key, v, why string) error {
		return fmt.Errorf("%w: %s %q: %s", ErrMalformedTags, key, v, why)
	}

	v, err := get(TagVersion)
	if err != nil {
		return member.Member{}, err
	}
	if v != strconv.Itoa(TagsVersion) {
		return member.Member{}, fmt.Errorf("%w: %s %q, this node reads %d", ErrTagsVersion, TagVersion, v, TagsVersion)
	}

	var m member.Member
	if m.Unique.Addr, err = get(TagAddr); err != nil {
		return member.Member{}, err
	}
	if err := checkText(m.Unique.Addr, false); err != nil {
		return member.Member{}, bad(TagAddr, m.Unique.Addr, err.Error())
	}

	if v, err = get(TagUID); err != nil {
		return member.Member{}, err
	}
	if m.Unique.UID, err = strconv.ParseUint(v, 10, 64); err != nil || m.Unique.UID == 0 ||
		strconv.FormatUint(m.Unique.UID, 10) != v {
		return member.Member{}, bad(TagUID, v, "want a decimal number above 0")
	}

	if v, err = get(TagStatus); err != nil {
		return member.Member{}, err
	}
	for s, name := range tagStatusNames {
		if name == v {
			m.Status = s
		}
	}
	if m.Status == 0 {
		return member.Member{}, bad(TagStatus, v, "want joining, up, leaving, exiting or down")
	}

	if v, err = get(TagAge); err != nil {
		return member.Member{}, err
	}
	if m.UpNumber, err = strconv.ParseInt(v, 10, 64); err != nil || m.UpNumber < 0 ||
		m.UpNumber > MaxUpNumber || strconv.FormatInt(m.UpNumber, 10) != v {
		return member.Member{}, bad(TagAge, v, "want a decimal number from 0 to 2^62")
	}
	if m.Status == member.Up && m.UpNumber == 0 {
		return member.Member{}, bad(TagAge, v, "an Up member needs an age above 0")
	}

	if v, err = get(TagRoles); err != nil {
		return member.Member{}, err
	}
	if v != "" {
		m.Roles = strings.Split(v, ",")
		for i, r := range m.Roles {
			if err := CheckRole(r); err != nil {
				return member.Member{}, bad(TagRoles, v, fmt.Sprintf("role %q %v", r, err))
			}
			if i > 0 && m.Roles[i-1] >= r {
				return member.Member{}, bad(TagRoles, v, "want sorted roles without duplicates")
			}
		}
	}

	if m.AppVersion, err = get(TagAppVersion); err != nil {
		return member.Member{}, err
	}
	if err := checkText(m.AppVersion, true); err != nil {
		return member.Member{}, bad(TagAppVersion, m.AppVersion, err.Error())
	}
	return m, nil
}

// checkText accepts valid UTF-8 without control characters or white space; empty text
// only when allowEmpty.
func checkText(s string, allowEmpty bool) error {
	if s == "" {
		if allowEmpty {
			return nil
		}
		return errors.New("is empty")
	}
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return errors.New("has a control or space character")
		}
	}
	return nil
}

// CheckRole accepts a role name: non-empty text without a comma.
func CheckRole(r string) error {
	if err := checkText(r, false); err != nil {
		return err
	}
	if strings.ContainsRune(r, ',') {
		return errors.New("has a comma")
	}
	return nil
}
