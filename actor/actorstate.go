package actor

import "github.com/troupe-go/troupe/internal/actorstate"

func init() {
	actorstate.Idle = func(ref any) bool {
		r, ok := ref.(Ref)
		if !ok {
			return false
		}
		c, ok := r.p.(*cell)
		// An owner gives the cell up (idle) only after a drain found the queue empty,
		// and a sender that pushes while it runs makes it drain again (acquire,
		// release): so idle means every message pushed before this load was handled.
		return ok && c.sched.Load() == schedIdle
	}
}
