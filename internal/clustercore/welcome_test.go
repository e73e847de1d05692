package clustercore

import (
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
)

func addr(i int, uid uint64) member.UniqueAddress {
	return member.UniqueAddress{Addr: "troupe://sim@10.0.0." + string(rune('0'+i)) + ":2552", UID: uid}
}

func up(c *Core, self member.UniqueAddress) bool {
	for _, m := range c.Snapshot().Members {
		if m.Unique == self {
			return m.Status == member.Up
		}
	}
	return false
}

// joinedCore returns the core of self, which has joined an existing cluster at now.
func joinedCore(t *testing.T, self member.Member, now time.Time) *Core {
	t.Helper()
	c, err := New(simConfig(self), now)
	if err != nil {
		t.Fatal(err)
	}
	c.JoinedCluster(false)
	return c
}

// A member that joined moves itself Up only once every member counted by it, and by
// those that answered it, knows it: one that joined through one side of a partition
// learns of the other side from the answer, and waits for it.
func TestJoiningMemberWaitsForEveryCountedMember(t *testing.T) {
	now := time.Unix(1000, 0)
	self := member.Member{Unique: addr(4, 40), Status: member.Joining}
	c := joinedCore(t, self, now)
	seed := member.Member{Unique: addr(3, 30), Status: member.Up, UpNumber: 5}
	c.MemberEvent(Join, "n3", seed, "", "", now)
	c.MemberEvent(Join, "n4", self, "", "", now)
	if c.MaybeUp(now); up(c, self.Unique) {
		t.Fatal("Up before any member answered")
	}
	asked := c.AskWelcomes()
	if len(asked) != 1 || len(asked[0].(AskWelcome).To) != 1 || asked[0].(AskWelcome).To[0] != seed.Unique {
		t.Fatalf("AskWelcomes = %v, want a request to %v", asked, seed.Unique)
	}
	// The seed answers; it counts a member across a partition this one never saw.
	other := addr(1, 10)
	c.Welcomed(seed.Unique, Welcome{Counted: []member.UniqueAddress{other, seed.Unique}}, now)
	if up(c, self.Unique) {
		t.Fatal("Up while a member the seed counts has not answered")
	}
	asked = c.AskWelcomes()
	if len(asked) != 1 || len(asked[0].(AskWelcome).To) != 2 {
		t.Fatalf("AskWelcomes = %v, want requests to %v and %v", asked, other, seed.Unique)
	}
	c.Welcomed(other, Welcome{Counted: []member.UniqueAddress{other, seed.Unique}, Unreachable: true}, now.Add(time.Second))
	if up(c, self.Unique) {
		t.Fatal("Up while a member sees a member unreachable")
	}
	c.Welcomed(other, Welcome{Counted: []member.UniqueAddress{other, seed.Unique}}, now.Add(2*time.Second))
	if !up(c, self.Unique) {
		t.Fatal("not Up once every counted member answered")
	}
	if got := c.AskWelcomes(); len(got) != 0 {
		t.Fatalf("AskWelcomes after Up = %v, want nothing", got)
	}
}

// A member that moves itself Up tells the members it waited for at once, since serf's
// gossip of its new tags may miss one of them for up to a full exchange (30 s); a
// member that takes the notice counts it Up as if serf had brought the tags.
func TestJoiningMemberAnnouncesItselfUp(t *testing.T) {
	now := time.Unix(1000, 0)
	self := member.Member{Unique: addr(4, 40), Status: member.Joining}
	c := joinedCore(t, self, now)
	seed := member.Member{Unique: addr(3, 30), Status: member.Up, UpNumber: 5}
	c.MemberEvent(Join, "n3", seed, "", "", now)
	c.MemberEvent(Join, "n4", self, "", "", now)
	c.MaybeUp(now)
	var notice *AnnounceUp
	for _, e := range c.Welcomed(seed.Unique, Welcome{Counted: []member.UniqueAddress{seed.Unique}}, now) {
		if a, ok := e.(AnnounceUp); ok {
			notice = &a
		}
	}
	if notice == nil || len(notice.To) != 1 || notice.To[0] != seed.Unique || notice.Self.Status != member.Up || notice.Self.Unique != self.Unique {
		t.Fatalf("moving Up announced %+v, want this member Up told to %v", notice, seed.Unique)
	}

	// The seed knows the member as Joining; serf has not brought its new tags.
	s, err := New(simConfig(seed), now)
	if err != nil {
		t.Fatal(err)
	}
	s.JoinedCluster(true)
	s.MemberEvent(Join, "n3", seed, "", "", now)
	s.MemberEvent(Join, "n4", self, "", "", now)
	if up(s, self.Unique) {
		t.Fatal("Up before the notice")
	}
	stale := notice.Self
	stale.Status = member.Joining
	s.AnnouncedUp(stale, now)
	if up(s, self.Unique) {
		t.Fatal("a notice that does not say Up moved the member Up")
	}
	s.AnnouncedUp(notice.Self, now)
	if !up(s, self.Unique) {
		t.Fatal("not Up after the member's notice")
	}
	// serf's tags, when they come, change nothing more.
	if effects := s.MemberEvent(Update, "n4", notice.Self, "", "", now.Add(30*time.Second)); len(effects) != 0 {
		t.Errorf("the tags after the notice gave %v, want nothing", effects)
	}
	// A notice from a member this node never knew is ignored.
	s.AnnouncedUp(member.Member{Unique: addr(5, 50), Status: member.Up, UpNumber: 9}, now)
	for _, m := range s.Snapshot().Members {
		if m.Unique == addr(5, 50) {
			t.Fatal("a notice from an unknown member added it")
		}
	}
}

// A member that does not speak the welcome exchange (Troupe v0.1.0, during a rolling
// upgrade) is not waited for, and is not told: the joining member moves Up once the
// members that speak it have answered.
func TestJoiningMemberDoesNotWaitForLegacyMembers(t *testing.T) {
	now := time.Unix(1000, 0)
	self := member.Member{Unique: addr(4, 40), Status: member.Joining}
	c := joinedCore(t, self, now)
	old := member.Member{Unique: addr(2, 20), Status: member.Up, UpNumber: 3}
	seed := member.Member{Unique: addr(3, 30), Status: member.Up, UpNumber: 5}
	c.Legacy(old.Unique)
	c.MemberEvent(Join, "n2", old, "", "", now)
	c.MemberEvent(Join, "n3", seed, "", "", now)
	c.MemberEvent(Join, "n4", self, "", "", now)
	c.MaybeUp(now)
	for _, e := range c.AskWelcomes() {
		for _, u := range e.(AskWelcome).To {
			if u == old.Unique {
				t.Fatal("asked a legacy member for a welcome")
			}
		}
	}
	for _, e := range c.Welcomed(seed.Unique, Welcome{Counted: []member.UniqueAddress{old.Unique, seed.Unique}}, now) {
		if a, ok := e.(AnnounceUp); ok && slices.Contains(a.To, old.Unique) {
			t.Fatal("announced Up to a legacy member")
		}
	}
	if !up(c, self.Unique) {
		t.Fatal("not Up once every member that speaks the welcome exchange answered")
	}
}
