package membership

import (
	"errors"
	"github.com/troupe-go/troupe/member"
	"maps"
	"slices"
	"strings"
	"testing"
)

func validTags() map[string]string {
	return map[string]string{
		TagVersion: "1", TagAddr: "troupe://orders@10.0.0.5:2552", TagUID: "42",
		TagStatus: "up", TagAge: "1700000000000", TagRoles: "backend,frontend", TagAppVersion: "1.4.0",
	}
}

func TestTagsRoundTrip(t *testing.T) {
	members := []member.Member{
		{Unique: member.UniqueAddress{Addr: "10.0.0.1:2552", UID: 7}, Status: member.Joining},
		{Unique: member.UniqueAddress{Addr: "troupe://s@[::1]:2552", UID: 1<<64 - 1}, Status: member.Up, UpNumber: 1, Roles: []string{"a"}},
		{Unique: member.UniqueAddress{Addr: "h:1", UID: 3}, Status: member.Leaving, UpNumber: MaxUpNumber, AppVersion: "v2"},
		{Unique: member.UniqueAddress{Addr: "h:1", UID: 3}, Status: member.Leaving}, // left before it was ever Up
		{Unique: member.UniqueAddress{Addr: "h:1", UID: 3}, Status: member.Exiting, UpNumber: 5, Roles: []string{"x", "y", "z"}},
		{Unique: member.UniqueAddress{Addr: "h:1", UID: 3}, Status: member.Down, UpNumber: 5},
	}
	for _, m := range members {
		tags, err := EncodeTags(m)
		if err != nil {
			t.Fatalf("EncodeTags(%+v): %v", m, err)
		}
		got, err := DecodeTags(tags)
		if err != nil {
			t.Fatalf("DecodeTags(%v): %v", tags, err)
		}
		if !equalMember(got, m) {
			t.Errorf("round trip %+v -> %v -> %+v", m, tags, got)
		}
	}
	// Keys of other users are ignored.
	tags := validTags()
	tags["role"] = "serf's own"
	if _, err := DecodeTags(tags); err != nil {
		t.Errorf("extra key: %v", err)
	}
}

func equalMember(a, b member.Member) bool {
	return a.Unique == b.Unique && a.Status == b.Status && a.UpNumber == b.UpNumber &&
		slices.Equal(a.Roles, b.Roles) && a.AppVersion == b.AppVersion
}

func TestDecodeTagsMalformed(t *testing.T) {
	tests := []struct {
		name string
		key  string
		val  string // "<none>" deletes the key
		err  error
	}{
		{"no version", TagVersion, "<none>", ErrMalformedTags},
		{"newer version", TagVersion, "2", ErrTagsVersion},
		{"garbage version", TagVersion, "x", ErrTagsVersion},
		{"no address", TagAddr, "<none>", ErrMalformedTags},
		{"empty address", TagAddr, "", ErrMalformedTags},
		{"address with a newline", TagAddr, "h:1\n", ErrMalformedTags},
		{"address not UTF-8", TagAddr, "h\xff:1", ErrMalformedTags},
		{"no uid", TagUID, "<none>", ErrMalformedTags},
		{"uid 0", TagUID, "0", ErrMalformedTags},
		{"negative uid", TagUID, "-1", ErrMalformedTags},
		{"uid overflow", TagUID, "18446744073709551616", ErrMalformedTags},
		{"uid with leading zero", TagUID, "042", ErrMalformedTags},
		{"uid with sign", TagUID, "+42", ErrMalformedTags},
		{"no status", TagStatus, "<none>", ErrMalformedTags},
		{"status removed", TagStatus, "removed", ErrMalformedTags},
		{"status capitalised", TagStatus, "Up", ErrMalformedTags},
		{"no age", TagAge, "<none>", ErrMalformedTags},
		{"negative age", TagAge, "-5", ErrMalformedTags},
		{"age too large", TagAge, "9223372036854775807", ErrMalformedTags},
		{"age not a number", TagAge, "soon", ErrMalformedTags},
		{"Up without age", TagAge, "0", ErrMalformedTags},
		{"no roles key", TagRoles, "<none>", ErrMalformedTags},
		{"empty role", TagRoles, "a,,b", ErrMalformedTags},
		{"trailing comma", TagRoles, "a,", ErrMalformedTags},
		{"unsorted roles", TagRoles, "b,a", ErrMalformedTags},
		{"duplicate roles", TagRoles, "a,a", ErrMalformedTags},
		{"role with space", TagRoles, "a b", ErrMalformedTags},
		{"no app version", TagAppVersion, "<none>", ErrMalformedTags},
		{"app version with control char", TagAppVersion, "1\x00", ErrMalformedTags},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tags := validTags()
			if tt.val == "<none>" {
				delete(tags, tt.key)
			} else {
				tags[tt.key] = tt.val
			}
			_, err := DecodeTags(tags)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q does not name the key %s", err, tt.key)
			}
		})
	}
	if _, err := DecodeTags(nil); !errors.Is(err, ErrMalformedTags) {
		t.Errorf("nil tags: %v", err)
	}
}

func TestEncodeTagsRefuses(t *testing.T) {
	ok := member.Member{Unique: member.UniqueAddress{Addr: "h:1", UID: 1}, Status: member.Up, UpNumber: 1}
	tests := []struct {
		name string
		edit func(m *member.Member)
		err  error
	}{
		{"removed", func(m *member.Member) { m.Status = member.Removed }, ErrInvalidMember},
		{"role with comma", func(m *member.Member) { m.Roles = []string{"a,b"} }, ErrInvalidMember},
		{"address with space", func(m *member.Member) { m.Unique.Addr = "h 1" }, ErrInvalidMember},
		{"app version with newline", func(m *member.Member) { m.AppVersion = "1\n" }, ErrInvalidMember},
		{"age too large", func(m *member.Member) { m.UpNumber = MaxUpNumber + 1 }, ErrInvalidMember},
		{"unsorted roles", func(m *member.Member) { m.Roles = []string{"b", "a"} }, ErrInvalidMember},
		{"too large", func(m *member.Member) { m.AppVersion = strings.Repeat("v", 500) }, ErrTagsTooLarge},
	}
	for _, tt := range tests {
		m := ok
		tt.edit(&m)
		if _, err := EncodeTags(m); !errors.Is(err, tt.err) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
		}
	}
}

// FuzzDecodeTags checks that DecodeTags never panics, that whatever it accepts is a
// member Membership accepts, and that accepted tags survive a round trip.
func FuzzDecodeTags(f *testing.F) {
	v := validTags()
	f.Add(v[TagVersion], v[TagAddr], v[TagUID], v[TagStatus], v[TagAge], v[TagRoles], v[TagAppVersion], uint8(0))
	f.Fuzz(func(t *testing.T, ver, addr, uid, status, age, roles, app string, missing uint8) {
		tags := map[string]string{
			TagVersion: ver, TagAddr: addr, TagUID: uid, TagStatus: status,
			TagAge: age, TagRoles: roles, TagAppVersion: app,
		}
		keys := slices.Sorted(maps.Keys(tags))
		for i, k := range keys {
			if missing&(1<<i) != 0 {
				delete(tags, k)
			}
		}
		m, err := DecodeTags(tags)
		if err != nil {
			if !errors.Is(err, ErrMalformedTags) && !errors.Is(err, ErrTagsVersion) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if err := validateMember(m); err != nil {
			t.Fatalf("decoded member is invalid: %v", err)
		}
		again, err := EncodeTags(m)
		if errors.Is(err, ErrTagsTooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("EncodeTags of a decoded member: %v", err)
		}
		for k, val := range again {
			if k == TagWelcome {
				continue // a capability of the encoder, not of the member
			}
			if tags[k] != val {
				t.Fatalf("round trip changed %s: %q -> %q", k, tags[k], val)
			}
		}
	})
}

// TestTagsSayTheWelcomeExchangeIsSpoken: what EncodeTags writes says the member speaks
// the welcome exchange; tags of v0.1.0, without the key, say it does not.
func TestTagsSayTheWelcomeExchangeIsSpoken(t *testing.T) {
	m, err := DecodeTags(validTags())
	if err != nil {
		t.Fatal(err)
	}
	tags, err := EncodeTags(m)
	if err != nil {
		t.Fatal(err)
	}
	if !SpeaksWelcome(tags) {
		t.Errorf("EncodeTags wrote %v, without %s", tags, TagWelcome)
	}
	delete(tags, TagWelcome)
	if SpeaksWelcome(tags) {
		t.Error("tags without the key speak the welcome exchange")
	}
	if _, err := DecodeTags(tags); err != nil {
		t.Errorf("tags without the key (v0.1.0's) do not decode: %v", err)
	}
}
