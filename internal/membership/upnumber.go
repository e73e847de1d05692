package membership

import "github.com/troupe-go/troupe/member"

// NextUpNumber chooses the age of a member that becomes Up now, without a leader:
// the larger of now (milliseconds of the node's wall clock since the Unix epoch) and one
// more than the highest UpNumber among the members it sees. The member publishes it in
// its tags (EncodeTags) and never changes it, so every node reads the same value.
//
// The clock keeps ages meaningful when the new member has not yet seen everyone (a
// member that became Up earlier has an earlier time), and the "seen + 1" part keeps
// them ordered when clocks disagree about members the new one does see. Two members
// that become Up at the same instant tie, and the lower address is older.
func NextUpNumber(nowMillis int64, seen []member.Member) int64 {
	next := nowMillis
	if next < 1 {
		next = 1
	}
	for _, m := range seen {
		if m.UpNumber >= next {
			next = m.UpNumber + 1
		}
	}
	return next
}
