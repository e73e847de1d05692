package management

import (
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
)

// The JSON views of the cluster's members, made from a node's view by pure functions.

// MemberView is one member in the management API's JSON.
type MemberView struct {
	// Node is the member's address (troupe://system@host:port).
	Node string `json:"node"`
	// NodeUID is its incarnation uid, as a decimal string (it does not fit a JSON
	// number exactly).
	NodeUID string `json:"nodeUid"`
	// Status is its status: Joining, Up, Leaving, Exiting, Down or Removed.
	Status string `json:"status"`
	// Roles are its roles, sorted.
	Roles []string `json:"roles"`
	// AppVersion is the application version it runs, when set.
	AppVersion string `json:"appVersion,omitempty"`
	// UpNumber is its age as the cluster records it (lower is older); 0 before Up.
	UpNumber int64 `json:"upNumber"`
	// AgeOrder is its place by age among the members that have one: 1 for the oldest;
	// 0 before it is Up.
	AgeOrder int `json:"ageOrder"`
}

// UnreachableView is an unreachable member and the members that observe it so.
type UnreachableView struct {
	Node       string   `json:"node"`
	ObservedBy []string `json:"observedBy"`
}

// MembersView answers GET /cluster/members: this node's view of the cluster.
type MembersView struct {
	// SelfNode is the address of the member that answered.
	SelfNode string `json:"selfNode"`
	// Members holds every member that is not Removed, in address order.
	Members []MemberView `json:"members"`
	// Unreachable holds the members some observer cannot reach, with those observers.
	Unreachable []UnreachableView `json:"unreachable"`
	// Oldest is the oldest Up or Leaving member ("" when none): the singletons and the
	// sharding coordinators without a role run there.
	Oldest string `json:"oldest"`
	// OldestPerRole is the oldest member of each role.
	OldestPerRole map[string]string `json:"oldestPerRole"`
}

// memberView returns m's view; age is its AgeOrder.
func memberView(m cluster.Member, age int) MemberView {
	roles := m.Roles
	if roles == nil {
		roles = []string{}
	}
	return MemberView{
		Node: m.Unique.Addr, NodeUID: strconv.FormatUint(m.Unique.UID, 10), Status: m.Status.String(),
		Roles: roles, AppVersion: m.AppVersion, UpNumber: m.UpNumber, AgeOrder: age,
	}
}

// ageOrders returns the AgeOrder of each member of members that has an age.
func ageOrders(members []cluster.Member) map[cluster.UniqueAddress]int {
	var aged []cluster.Member
	for _, m := range members {
		if m.UpNumber > 0 {
			aged = append(aged, m)
		}
	}
	slices.SortStableFunc(aged, func(a, b cluster.Member) int {
		switch {
		case a.IsOlderThan(b):
			return -1
		case b.IsOlderThan(a):
			return 1
		}
		return 0
	})
	out := make(map[cluster.UniqueAddress]int, len(aged))
	for i, m := range aged {
		out[m.Unique] = i + 1
	}
	return out
}

// membersView turns a node's view of the cluster into the JSON view: self is the
// node's identity, st its state and obs its reachability observations.
func membersView(self cluster.UniqueAddress, st cluster.CurrentClusterState, obs []cluster.Observation) MembersView {
	ages := ageOrders(st.Members)
	v := MembersView{
		SelfNode: self.Addr, Members: make([]MemberView, 0, len(st.Members)),
		Unreachable: make([]UnreachableView, 0, len(st.Unreachable)), OldestPerRole: map[string]string{},
	}
	for _, m := range st.Members {
		v.Members = append(v.Members, memberView(m, ages[m.Unique]))
	}
	for _, m := range st.Unreachable {
		u := UnreachableView{Node: m.Unique.Addr, ObservedBy: []string{}}
		for _, o := range obs {
			if o.Subject == m.Unique && !slices.Contains(u.ObservedBy, o.Observer.Addr) {
				u.ObservedBy = append(u.ObservedBy, o.Observer.Addr)
			}
		}
		slices.Sort(u.ObservedBy)
		v.Unreachable = append(v.Unreachable, u)
	}
	if st.Oldest != nil {
		v.Oldest = st.Oldest.Unique.Addr
	}
	for role, m := range st.OldestByRole {
		v.OldestPerRole[role] = m.Unique.Addr
	}
	return v
}

// findMember returns the member at addr in st: the newest incarnation when several are
// listed (a restarted node whose old incarnation is not removed yet).
func findMember(st cluster.CurrentClusterState, addr actor.Address) (cluster.Member, bool) {
	var found cluster.Member
	ok := false
	for _, m := range st.Members {
		if m.Unique.Addr == addr.String() && (!ok || m.Status < found.Status) {
			found, ok = m, true
		}
	}
	return found, ok
}

// addressScheme is the scheme of Troupe's remote addresses.
const addressScheme = "troupe://"

// parseMemberAddress parses the {address} of a member route: a full address
// (troupe://system@host:port) or one without its scheme (system@host:port). It
// accepts only addresses with a host and a port.
func parseMemberAddress(s string) (actor.Address, error) {
	if !strings.HasPrefix(s, addressScheme) {
		s = addressScheme + s
	}
	a, err := actor.ParseAddress(s)
	if err != nil {
		return actor.Address{}, err
	}
	if !a.HasHost() || a.Port <= 0 {
		return actor.Address{}, errNoHostPort
	}
	return a, nil
}
