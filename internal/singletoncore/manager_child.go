package singletoncore

import (
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/member"
)

// The manager's singleton child, its lease and its timers.

func (m *ManagerCore) onChildTerminated() {
	if m.child == childNone {
		return
	}
	requested := m.child == childTerminating
	m.child = childNone
	switch m.state {
	case StateOldest:
		if requested {
			m.tryStartChild() // the lease was lost: acquire it again
		} else {
			m.childGone = true
		}
	case StateWasOldest:
		if !requested {
			m.childGone = true
		}
		m.releaseLease()
	case StateHandingOver:
		m.finishHandOver()
	case StateStopping:
		m.stop()
	default:
		m.releaseLease()
	}
}

func (m *ManagerCore) onLeaseAcquired() {
	m.leasePending = false
	if m.state != StateOldest {
		m.emit(ReleaseLease{})
		return
	}
	m.leaseHeld = true
	m.cancelTimer(TimerLeaseRetry)
	m.tryStartChild()
}

func (m *ManagerCore) onLeaseLost() {
	if !m.leaseHeld {
		return
	}
	m.leaseHeld = false
	switch m.child {
	case childRunning:
		m.emit(SendTermination{})
		m.child = childTerminating
	case childNone:
		m.tryStartChild()
	}
}

func (m *ManagerCore) releaseLease() {
	if m.leaseHeld {
		m.leaseHeld = false
		m.emit(ReleaseLease{})
	}
}

// ---- timers ----

func (m *ManagerCore) startTimer(name string) {
	if !m.timers[name] {
		m.timers[name] = true
		m.emit(StartTimer{Name: name, Interval: m.cfg.HandOverRetryInterval})
	}
}

func (m *ManagerCore) cancelTimer(name string) {
	if m.timers[name] {
		delete(m.timers, name)
		m.emit(CancelTimer{Name: name})
	}
}

// cancelTimers cancels every running timer, in name order.
func (m *ManagerCore) cancelTimers() {
	names := make([]string, 0, len(m.timers))
	for name := range m.timers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		m.cancelTimer(name)
	}
}

func (m *ManagerCore) onTimer(name string) {
	if !m.timers[name] {
		return // cancelled; a firing was already queued
	}
	switch name {
	case TimerHandOverRetry:
		if m.state != StateBecomingOldest {
			return
		}
		m.retries++
		bl := m.blockers()
		for _, b := range bl {
			if _, gone := m.awaitingMargin[b]; !gone && !m.inProgress[b] {
				m.sendTo(b, HandOverToMe{From: m.self, To: b})
			}
		}
		if m.retries > m.limit && !m.alerted {
			m.alerted = true
			m.emit(Alert{Message: fmt.Sprintf("singleton %q: %v did not hand over after %d retries; "+
				"the singleton stays stopped until they do or are removed", m.cfg.Name, bl, m.retries)})
		}
	case TimerTakeOverRetry:
		if m.state != StateWasOldest {
			return
		}
		m.retries++
		if m.retries > max(1, m.limit-3) {
			if !m.alerted {
				m.alerted = true
				m.emit(Alert{Message: fmt.Sprintf("singleton %q: %v did not take over after %d retries",
					m.cfg.Name, m.takeOverTo, m.retries-1)})
			}
			if m.leaving {
				// Stop the singleton; the next oldest gets what this manager holds
				// when it asks.
				m.toHandingOver(member.UniqueAddress{})
				return
			}
		}
		m.sendTo(m.takeOverTo, TakeOverFromMe{From: m.self})
	case TimerLeaseRetry:
		if m.state == StateOldest && !m.leaseHeld && !m.leasePending && m.child == childNone {
			m.leasePending = true
			m.emit(AcquireLease{})
		}
	case TimerOrderWait:
		if !m.homeish() {
			return
		}
		out, gaveUp := m.seq.tick(m.limit, m.released)
		for _, p := range gaveUp {
			m.emit(Alert{Message: fmt.Sprintf("singleton %q: gave up waiting for earlier messages from proxy %v/%s; "+
				"they are lost or will arrive out of order", m.cfg.Name, p.Node, p.Path)})
		}
		m.dispatch(out)
		m.checkOrderWait()
	}
}
