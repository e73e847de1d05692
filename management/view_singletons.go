package management

import "github.com/troupe-go/troupe/singleton"

// SingletonView is one singleton of GET /cluster/singletons, as this member's manager
// of it sees it.
type SingletonView struct {
	// Name is the singleton's name (a sharding coordinator's is <type>Coordinator).
	Name string `json:"name"`
	// Node is the member where it runs, or is about to: the oldest member with its
	// role as the manager sees it ("" before this member is Up, or when none).
	Node string `json:"node"`
	// RunningHere is true while it runs on this member.
	RunningHere bool `json:"runningHere"`
	// State is the manager's state: Start, Younger, BecomingOldest, Oldest,
	// WasOldest, HandingOver, Stopping or End.
	State string `json:"state"`
	// Stopped is true once this member's manager has stopped.
	Stopped bool `json:"stopped"`
}

// SingletonsView answers GET /cluster/singletons.
type SingletonsView struct {
	// SelfNode is the address of the member that answered.
	SelfNode string `json:"selfNode"`
	// Singletons holds the singletons with a manager on this member, in name order.
	Singletons []SingletonView `json:"singletons"`
}

func singletonView(st singleton.Status) SingletonView {
	return SingletonView{Name: st.Name, Node: st.Oldest.Addr, RunningHere: st.Running, State: st.State.String(), Stopped: st.Stopped}
}

// singletonsView returns the view of the statuses of this member's managers.
func singletonsView(self string, sts []singleton.Status) SingletonsView {
	v := SingletonsView{SelfNode: self, Singletons: make([]SingletonView, 0, len(sts))}
	for _, st := range sts {
		v.Singletons = append(v.Singletons, singletonView(st))
	}
	return v
}
