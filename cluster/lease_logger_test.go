package cluster_test

import (
	"testing"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/lease"
	"go.uber.org/zap"
)

// loggingLease is a lease that records the logger it is handed (lease.SystemLogger).
type loggingLease struct {
	lease.Lease
	got *zap.Logger
}

func (l *loggingLease) UseSystemLogger(log *zap.Logger) { l.got = log }

// The downing lease takes the system's logger when the cluster starts with it, as
// pglease.Lease does when it was given no logger of its own.
func TestDowningLeaseGetsTheSystemLogger(t *testing.T) {
	inner, err := lease.NewMemoryStore().Lease(lease.Settings{LeaseName: "downing", OwnerName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	l := &loggingLease{Lease: inner}
	sys := withRemote(t)
	cfg := testConfig()
	cfg.Downing.Strategy, cfg.Downing.Lease = cluster.LeaseMajority, l
	if _, err := cluster.Start(sys, cfg); err != nil {
		t.Fatal(err)
	}
	if l.got != sys.Logger() {
		t.Fatalf("the lease got logger %v, want the system's", l.got)
	}
}
