package clustercore

import (
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

// A member that joined moves itself Up only once every member counted by it, and by
// those that answered it, knows it: one that joined through one side of a partition
// learns of the other side from the answer, and waits for it.
func TestJoiningMemberWaitsForEveryCountedMember(t *testing.T) {
	now := time.Unix(1000, 0)
	self := member.Member{Unique: addr(4, 40), Status: member.Joining}
	c, err := New(simConfig(self), now)
	if err != nil {
		t.Fatal(err)
	}
	c.JoinedCluster(false)
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
