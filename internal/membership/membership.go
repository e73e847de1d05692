package membership

import (
	"errors"
	"fmt"
	"github.com/troupe-go/troupe/member"
	"maps"
	"slices"
	"strings"
)

// Errors returned by Membership. They are wrapped with the member and statuses
// involved; test for them with errors.Is. An input that returns an error changed
// nothing.
var (
	// ErrUnknownMember is returned for an input about a member that is not (or no
	// longer) a member.
	ErrUnknownMember = errors.New("cluster: unknown member")
	// ErrIllegalTransition is returned for a status change that does not move forward
	// (see MemberStatus.CanMoveTo); the change is ignored.
	ErrIllegalTransition = errors.New("cluster: illegal member status transition")
	// ErrRemovedMember is returned when a removed identity shows up again: it can never
	// be a member again; a restarted node has a new uid.
	ErrRemovedMember = errors.New("cluster: member was removed and cannot come back")
	// ErrAddressInUse is returned when another incarnation claims this node's own
	// address.
	ErrAddressInUse = errors.New("cluster: address in use by this node")
	// ErrMemberChanged is returned when a report about a known member changes what never
	// changes within an incarnation: its roles, app version or age.
	ErrMemberChanged = errors.New("cluster: member identity data changed")
	// ErrInvalidMember is returned for a member that is not well formed: an empty
	// address, uid 0, an invalid status, roles not a sorted set, or an Up member without
	// an age.
	ErrInvalidMember = errors.New("cluster: invalid member")
	// ErrInvalidConfig is returned by MembershipConfig.Validate and DowningConfig.Validate.
	ErrInvalidConfig = errors.New("membership: invalid configuration")
)

// MembershipConfig holds the settings of a Membership. The zero value is valid and
// means: no minimum number of members.
type MembershipConfig struct {
	// MinNrOfMembers is how many members must have joined before any member moves from
	// Joining to Up. 0 and 1 mean no gate.
	MinNrOfMembers int
	// MinNrOfMembersOfRole is, per role, how many members with the role must have joined
	// before any member moves from Joining to Up.
	MinNrOfMembersOfRole map[string]int
}

// Validate reports a negative minimum or an empty role name, wrapping ErrInvalidConfig.
func (c MembershipConfig) Validate() error {
	if c.MinNrOfMembers < 0 {
		return fmt.Errorf("%w: MinNrOfMembers %d is negative", ErrInvalidConfig, c.MinNrOfMembers)
	}
	for r, n := range c.MinNrOfMembersOfRole {
		if r == "" {
			return fmt.Errorf("%w: MinNrOfMembersOfRole has an empty role", ErrInvalidConfig)
		}
		if n < 0 {
			return fmt.Errorf("%w: MinNrOfMembersOfRole[%q] %d is negative", ErrInvalidConfig, r, n)
		}
	}
	return nil
}

// entry is a member plus what is known about it but not yet in effect.
type entry struct {
	m member.Member
	// pendingUp is the age the member reported with status Up while min-nr-of-members
	// was not met; the member stays Joining here until it is. 0 when none.
	pendingUp int64
}

// Membership is one node's view of the cluster: the members, their statuses and ages,
// and which of them are unreachable. It is a pure state machine: each method takes one
// observation, updates the view and returns the events to publish, in order. It does no
// I/O, starts no goroutine and is not safe for concurrent use; the actor around it
// serialises the inputs.
//
// Rules it keeps:
//   - no member moves from Joining to Up until min-nr-of-members (overall and per role)
//     have joined; a member that reports itself Up earlier stays Joining here and
//     becomes Up as soon as the minimum is met;
//   - statuses only move forward (MemberStatus.CanMoveTo); other changes are ignored
//     and returned as ErrIllegalTransition;
//   - a removed identity never comes back (ErrRemovedMember); a new incarnation on the
//     address of a member is admitted and the old incarnation downed (the address can
//     be bound by one process only, so a new incarnation proves the old one gone),
//     except on this node's own address (ErrAddressInUse);
//   - OldestChanged is published whenever the oldest Up or Leaving member, overall or
//     of a role, changes.
type Membership struct {
	cfg         MembershipConfig
	self        member.UniqueAddress
	members     map[member.UniqueAddress]*entry
	byAddr      map[string]member.UniqueAddress
	unreachable map[member.UniqueAddress]struct{}
	removed     map[member.UniqueAddress]struct{}
	// oldest holds the oldest member per role ("" for all), as last published.
	oldest map[string]member.UniqueAddress
}

// NewMembership returns the view of the node self, with self as its only member (in
// self's status, normally Joining). It returns an error for an invalid configuration or
// self.
func NewMembership(cfg MembershipConfig, self member.Member) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := validateMember(self); err != nil {
		return nil, err
	}
	if self.Status == member.Removed {
		return nil, fmt.Errorf("%w: self %s is Removed", ErrInvalidMember, self.Unique)
	}
	ms := &Membership{
		cfg:         cfg,
		self:        self.Unique,
		members:     make(map[member.UniqueAddress]*entry),
		byAddr:      make(map[string]member.UniqueAddress),
		unreachable: make(map[member.UniqueAddress]struct{}),
		removed:     make(map[member.UniqueAddress]struct{}),
		oldest:      make(map[string]member.UniqueAddress),
	}
	ms.add(self)
	if self.Status == member.Up && !ms.MinMembersMet() {
		ms.members[self.Unique].m.Status = member.Joining
		ms.members[self.Unique].m.UpNumber = 0
		ms.members[self.Unique].pendingUp = self.UpNumber
	}
	ms.oldestChanges(nil) // record the initial oldest; the state snapshot carries it
	return ms, nil
}

// validateMember checks the shape of a member report.
func validateMember(m member.Member) error {
	switch {
	case m.Unique.Addr == "":
		return fmt.Errorf("%w: empty address", ErrInvalidMember)
	case m.Unique.UID == 0:
		return fmt.Errorf("%w: %s has uid 0", ErrInvalidMember, m.Unique)
	case !m.Status.Valid():
		return fmt.Errorf("%w: %s has status %s", ErrInvalidMember, m.Unique, m.Status)
	case m.UpNumber < 0:
		return fmt.Errorf("%w: %s has negative age %d", ErrInvalidMember, m.Unique, m.UpNumber)
	case m.Status == member.Up && m.UpNumber == 0:
		return fmt.Errorf("%w: %s is Up without an age", ErrInvalidMember, m.Unique)
	}
	for i, r := range m.Roles {
		if r == "" || (i > 0 && m.Roles[i-1] >= r) {
			return fmt.Errorf("%w: %s roles %q are not a sorted set of non-empty names",
				ErrInvalidMember, m.Unique, m.Roles)
		}
	}
	return nil
}

// add stores a new member as given.
func (ms *Membership) add(m member.Member) {
	m = m.Clone()
	ms.members[m.Unique] = &entry{m: m}
	ms.byAddr[m.Unique.Addr] = m.Unique
}

// Self returns this node's own member.
func (ms *Membership) Self() member.Member {
	return ms.members[ms.self].m.Clone()
}

// Member returns the member with the identity; ok is false when it is not a member.
func (ms *Membership) Member(u member.UniqueAddress) (m member.Member, ok bool) {
	e, ok := ms.members[u]
	if !ok {
		return member.Member{}, false
	}
	return e.m.Clone(), true
}

// Members returns every member that is not Removed, ordered by address.
func (ms *Membership) Members() []member.Member {
	out := make([]member.Member, 0, len(ms.members))
	for _, e := range ms.members {
		out = append(out, e.m.Clone())
	}
	slices.SortFunc(out, func(a, b member.Member) int { return member.CompareAddress(a.Unique, b.Unique) })
	return out
}

// IsUnreachable reports whether the member is currently unreachable.
func (ms *Membership) IsUnreachable(u member.UniqueAddress) bool {
	_, ok := ms.unreachable[u]
	return ok
}

// WasRemoved reports whether the identity was a member and has been removed.
func (ms *Membership) WasRemoved(u member.UniqueAddress) bool {
	_, ok := ms.removed[u]
	return ok
}

// Oldest returns the oldest Up or Leaving member with the role ("" for all members).
func (ms *Membership) Oldest(role string) (member.Member, bool) {
	return member.Oldest(ms.Members(), role)
}

// MinMembersMet reports whether enough members have joined for members to move from
// Joining to Up: at least MinNrOfMembers, and for each role in MinNrOfMembersOfRole at
// least that many with the role. Every member that is not Down counts, whatever its
// status.
func (ms *Membership) MinMembersMet() bool {
	total := 0
	perRole := make(map[string]int, len(ms.cfg.MinNrOfMembersOfRole))
	for _, e := range ms.members {
		if e.m.Status == member.Down {
			continue
		}
		total++
		for _, r := range e.m.Roles {
			if _, ok := ms.cfg.MinNrOfMembersOfRole[r]; ok {
				perRole[r]++
			}
		}
	}
	if total < ms.cfg.MinNrOfMembers {
		return false
	}
	for r, n := range ms.cfg.MinNrOfMembersOfRole {
		if perRole[r] < n {
			return false
		}
	}
	return true
}

// NextUpNumber returns the age this node should take when it moves itself to Up now
// (see the function NextUpNumber), given every member it sees.
func (ms *Membership) NextUpNumber(nowMillis int64) int64 {
	seen := make([]member.Member, 0, len(ms.members))
	for _, e := range ms.members {
		m := e.m
		if e.pendingUp > m.UpNumber {
			m.UpNumber = e.pendingUp
		}
		seen = append(seen, m)
	}
	return NextUpNumber(nowMillis, seen)
}

// State returns the snapshot for a new subscriber.
func (ms *Membership) State() member.CurrentClusterState {
	members := ms.Members()
	st := member.CurrentClusterState{
		Members:       members,
		OldestByRole:  member.OldestByRole(members),
		MinMembersMet: ms.MinMembersMet(),
	}
	for _, m := range members {
		if ms.IsUnreachable(m.Unique) {
			st.Unreachable = append(st.Unreachable, m.Clone())
		}
	}
	if o, ok := member.Oldest(members, ""); ok {
		st.Oldest = &o
	}
	return st
}

// Observe takes a member as it describes itself (normally decoded from its tags with
// DecodeTags) and returns the events that follow. A member seen for the first time is
// added (MemberJoined, or the event of the status it reports); a known member moves to
// the status it reports. Reports that would move a status backwards return
// ErrIllegalTransition, except reports about a member that is Down here: those are
// expected (it does not know yet) and ignored without error.
func (ms *Membership) Observe(m member.Member) ([]member.Event, error) {
	if err := validateMember(m); err != nil {
		return nil, err
	}
	e, known := ms.members[m.Unique]
	if !known {
		return ms.admit(m)
	}
	if !slices.Equal(e.m.Roles, m.Roles) || e.m.AppVersion != m.AppVersion ||
		(e.m.UpNumber != 0 && m.UpNumber != 0 && e.m.UpNumber != m.UpNumber) {
		return nil, fmt.Errorf("%w: %s reported roles %q app %q age %d, known roles %q app %q age %d",
			ErrMemberChanged, m.Unique, m.Roles, m.AppVersion, m.UpNumber,
			e.m.Roles, e.m.AppVersion, e.m.UpNumber)
	}
	if e.m.Status == member.Down && m.Status < member.Down {
		return nil, nil
	}
	if m.Status == e.m.Status {
		return nil, nil
	}
	evs, err := ms.move(e, m.Status, m.UpNumber, nil)
	if err != nil {
		return nil, err
	}
	return ms.finish(evs), nil
}

// admit adds a member seen for the first time.
func (ms *Membership) admit(m member.Member) ([]member.Event, error) {
	if _, gone := ms.removed[m.Unique]; gone {
		return nil, fmt.Errorf("%w: %s", ErrRemovedMember, m.Unique)
	}
	if m.Status == member.Removed {
		return nil, fmt.Errorf("%w: %s reported Removed before it was seen", ErrUnknownMember, m.Unique)
	}
	var evs []member.Event
	if prev, ok := ms.byAddr[m.Unique.Addr]; ok {
		old := ms.members[prev]
		switch {
		case old.m.Status == member.Down:
		case prev != ms.self:
			// The address can be bound by one process only, and serf holds one entry
			// per address: the new incarnation replaced the old one, which is gone
			// even if no failure was detected (a quick restart).
			evs, _ = ms.move(old, member.Down, 0, evs) // Down is legal from every status but Removed
		default:
			return nil, fmt.Errorf("%w: %s claims the address of %s", ErrAddressInUse, m.Unique, prev)
		}
	}
	status, age := m.Status, m.UpNumber
	m.Status, m.UpNumber = member.Joining, 0
	ms.add(m)
	e := ms.members[m.Unique]
	if status == member.Joining {
		evs = append(evs, member.MemberJoined{Member: e.m.Clone()})
		return ms.finish(evs), nil
	}
	if status == member.Up && !ms.MinMembersMet() {
		e.pendingUp = age
		evs = append(evs, member.MemberJoined{Member: e.m.Clone()})
		return ms.finish(evs), nil
	}
	evs, _ = ms.move(e, status, age, evs) // any status after Joining but Removed is legal
	return ms.finish(evs), nil
}

// move moves a known member to status next and appends the resulting events to evs.
// age is the age the member reported (0 if unknown).
func (ms *Membership) move(e *entry, next member.MemberStatus, age int64, evs []member.Event) ([]member.Event, error) {
	from := e.m.Status
	if next == member.Up && from == member.Joining {
		if age <= 0 {
			age = e.pendingUp
		}
		if age <= 0 {
			return nil, fmt.Errorf("%w: %s cannot become Up without an age", ErrInvalidMember, e.m.Unique)
		}
		if !ms.MinMembersMet() {
			e.pendingUp = age
			return evs, nil
		}
	}
	if !from.CanMoveTo(next) {
		return nil, fmt.Errorf("%w: %s from %s to %s", ErrIllegalTransition, e.m.Unique, from, next)
	}
	if e.m.UpNumber == 0 && next >= member.Up && next != member.Down {
		if age <= 0 {
			age = e.pendingUp
		}
		e.m.UpNumber = age
	}
	e.pendingUp = 0
	e.m.Status = next
	switch next {
	case member.Up:
		evs = append(evs, member.MemberUp{Member: e.m.Clone()})
	case member.Leaving:
		evs = append(evs, member.MemberLeft{Member: e.m.Clone()})
	case member.Exiting:
		evs = append(evs, member.MemberExited{Member: e.m.Clone()})
	case member.Down:
		evs = append(evs, member.MemberDowned{Member: e.m.Clone()})
	case member.Removed:
		u := e.m.Unique
		delete(ms.members, u)
		delete(ms.unreachable, u)
		if ms.byAddr[u.Addr] == u {
			delete(ms.byAddr, u.Addr)
		}
		ms.removed[u] = struct{}{}
		evs = append(evs, member.MemberRemoved{Member: e.m.Clone(), PreviousStatus: from})
	}
	return evs, nil
}

// SetStatus moves a known member to status next, as decided or observed locally, and
// returns the events that follow. Moving to Up needs the age the member reported
// (use Observe); moving to the same status is a no-op.
func (ms *Membership) SetStatus(u member.UniqueAddress, next member.MemberStatus) ([]member.Event, error) {
	e, ok := ms.members[u]
	if !ok {
		if _, gone := ms.removed[u]; gone && next == member.Removed {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s", ErrUnknownMember, u)
	}
	if e.m.Status == next {
		return nil, nil
	}
	evs, err := ms.move(e, next, 0, nil)
	if err != nil {
		return nil, err
	}
	return ms.finish(evs), nil
}

// Leave records that the member asked to leave: it moves to Leaving.
func (ms *Membership) Leave(u member.UniqueAddress) ([]member.Event, error) {
	return ms.SetStatus(u, member.Leaving)
}

// Down records that the member was declared Down, by the split-brain resolver or by
// hand. Any member that is not yet Down may be downed, including this node itself.
func (ms *Membership) Down(u member.UniqueAddress) ([]member.Event, error) {
	return ms.SetStatus(u, member.Down)
}

// Remove records that the member is gone: it must be Exiting or Down. Its identity can
// never be a member again.
func (ms *Membership) Remove(u member.UniqueAddress) ([]member.Event, error) {
	return ms.SetStatus(u, member.Removed)
}

// Unreachable records that the failure detector lost contact with the member. It
// returns UnreachableMember the first time, nothing when the member already is
// unreachable. This node never marks itself unreachable; that input is ignored.
func (ms *Membership) Unreachable(u member.UniqueAddress) ([]member.Event, error) {
	e, ok := ms.members[u]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownMember, u)
	}
	if u == ms.self || ms.IsUnreachable(u) {
		return nil, nil
	}
	ms.unreachable[u] = struct{}{}
	return ms.finish([]member.Event{member.UnreachableMember{Member: e.m.Clone()}}), nil
}

// Reachable records that an unreachable member is reachable again: ReachableMember,
// or nothing when it was not unreachable.
func (ms *Membership) Reachable(u member.UniqueAddress) ([]member.Event, error) {
	e, ok := ms.members[u]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownMember, u)
	}
	if !ms.IsUnreachable(u) {
		return nil, nil
	}
	delete(ms.unreachable, u)
	return ms.finish([]member.Event{member.ReachableMember{Member: e.m.Clone()}}), nil
}

// finish promotes the members waiting for min-nr-of-members, if it is met now, and
// appends the oldest changes.
func (ms *Membership) finish(evs []member.Event) []member.Event {
	if ms.MinMembersMet() {
		var ready []*entry
		for _, e := range ms.members {
			if e.m.Status == member.Joining && e.pendingUp > 0 {
				ready = append(ready, e)
			}
		}
		slices.SortFunc(ready, func(a, b *entry) int {
			x, y := a.m, b.m
			x.UpNumber, y.UpNumber = a.pendingUp, b.pendingUp
			return member.CompareAge(x, y)
		})
		for _, e := range ready {
			evs, _ = ms.move(e, member.Up, e.pendingUp, evs) // Joining to Up with an age is legal
		}
	}
	return ms.oldestChanges(evs)
}

// oldestChanges appends an OldestChanged for every role ("" first, then by name) whose
// oldest member differs from the one last published.
func (ms *Membership) oldestChanges(evs []member.Event) []member.Event {
	members := ms.Members()
	now := member.OldestByRole(members)
	if o, ok := member.Oldest(members, ""); ok {
		now[""] = o
	}
	roles := slices.Collect(maps.Keys(now))
	for r := range ms.oldest {
		if _, ok := now[r]; !ok {
			roles = append(roles, r)
		}
	}
	slices.SortFunc(roles, strings.Compare) // "" sorts first
	for _, r := range roles {
		o, has := now[r]
		prev, had := ms.oldest[r]
		if has == had && (!has || prev == o.Unique) {
			continue
		}
		ev := member.OldestChanged{Role: r}
		if has {
			ms.oldest[r] = o.Unique
			ev.Oldest = &o
		} else {
			delete(ms.oldest, r)
		}
		evs = append(evs, ev)
	}
	return evs
}
