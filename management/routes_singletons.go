package management

import (
	"net/http"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/singleton"
)

// handleSingletons answers GET /cluster/singletons.
func (m *Management) handleSingletons(w http.ResponseWriter, _ *http.Request) {
	m.watchSingletons()
	var sts []singleton.Status
	for _, mgr := range singleton.Managers(m.sys) {
		sts = append(sts, mgr.Status())
	}
	writeJSON(w, http.StatusOK, singletonsView(m.selfNode(), sts))
}

// selfNode returns this member's address ("" without a cluster or remoting).
func (m *Management) selfNode() string {
	if c := cluster.Get(m.sys); c != nil {
		return c.SelfUniqueAddress().Addr
	}
	if a := m.sys.Address(); a.HasHost() {
		return a.String()
	}
	return ""
}

// watchSingletons starts following every singleton manager of this member that is not
// followed yet: each change of where its singleton runs (or whether it runs here) is
// a singleton-changed event. It is called at Start, at every cluster event (when
// singletons move) and when a stream opens, so that managers started later are found.
func (m *Management) watchSingletons() {
	for _, mgr := range singleton.Managers(m.sys) {
		m.watchMu.Lock()
		if m.watched == nil {
			m.watched = map[*singleton.Manager]bool{}
		}
		if m.watched[mgr] || m.ctx.Err() != nil {
			m.watchMu.Unlock()
			continue
		}
		m.watched[mgr] = true
		m.watchers.Add(1)
		m.watchMu.Unlock()
		go m.watchSingleton(mgr)
	}
}

// watchSingleton publishes a singleton-changed event at each change of mgr's status
// that says where its singleton runs, until the manager or the server stops.
func (m *Management) watchSingleton(mgr *singleton.Manager) {
	defer m.watchers.Done()
	last := mgr.Status()
	for {
		st, err := mgr.AwaitStatus(m.ctx, func(s singleton.Status) bool {
			return s.Oldest != last.Oldest || s.Running != last.Running || s.Stopped != last.Stopped
		})
		if err != nil {
			if st.Stopped && !last.Stopped {
				m.hub.publish(singletonEvent(st, time.Now()))
			}
			return
		}
		m.hub.publish(singletonEvent(st, time.Now()))
		last = st
		if st.Stopped {
			return
		}
	}
}
