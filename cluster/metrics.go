package cluster

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the cluster's metrics.
const MeterName = "github.com/troupe-go/troupe/cluster"

// numActions bounds the resolver's actions (sbr.Action), for the decision counters.
const numActions = int(sbr.ReverseDownIndirectlyConnected) + 1

// decisionCounts counts the split-brain resolver's decisions by action.
type decisionCounts [numActions]atomic.Uint64

func (d *decisionCounts) note(a sbr.Action) {
	if int(a) < numActions {
		d[a].Add(1)
	}
}

// memberStatuses are the statuses a member of CurrentClusterState.Members can have.
var memberStatuses = []MemberStatus{Joining, Up, Leaving, Exiting, Down}

// startMetrics registers the cluster's instruments when the system has a
// MeterProvider. They are read from the state snapshot behind State and from the
// decision counters, in one callback: membership pays nothing per event.
func (c *Cluster) startMetrics() {
	mp := c.sys.MeterProvider()
	if mp == nil {
		return
	}
	mt := mp.Meter(MeterName)
	var errs []error
	members, err := mt.Int64ObservableUpDownCounter("troupe.cluster.members", metric.WithUnit("{member}"),
		metric.WithDescription("Members as this node sees them, by status (joining, up, leaving, exiting, down)."))
	errs = append(errs, err)
	unreachable, err := mt.Int64ObservableUpDownCounter("troupe.cluster.members.unreachable", metric.WithUnit("{member}"),
		metric.WithDescription("Members this node's view holds unreachable."))
	errs = append(errs, err)
	decisions, err := mt.Int64ObservableCounter("troupe.cluster.downing.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions of this node's split-brain resolver, by strategy and action (down-unreachable, down-reachable, down-all, ...)."))
	errs = append(errs, err)
	statusOpts := make([]metric.ObserveOption, len(memberStatuses))
	for i, s := range memberStatuses {
		statusOpts[i] = metric.WithAttributes(attribute.String("status", strings.ToLower(s.String())))
	}
	strategy := attribute.String("strategy", c.cfg.Downing.Strategy.String())
	actionOpts := make([]metric.ObserveOption, numActions)
	for a := range numActions {
		actionOpts[a] = metric.WithAttributes(strategy, attribute.String("action", sbr.Action(a).String()))
	}
	errs = append(errs, telemetry.Observe(c.sys.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		st := c.State()
		counts := make([]int64, len(memberStatuses))
		for _, m := range st.Members {
			for i, s := range memberStatuses {
				if m.Status == s {
					counts[i]++
				}
			}
		}
		for i := range memberStatuses {
			o.ObserveInt64(members, counts[i], statusOpts[i])
		}
		o.ObserveInt64(unreachable, int64(len(st.Unreachable)))
		for a := 1; a < numActions; a++ { // NoAction is never acted on
			o.ObserveInt64(decisions, int64(c.decisions[a].Load()), actionOpts[a])
		}
		return nil
	}, members, unreachable, decisions))
	telemetry.Report(c.log, "cluster", errs)
}
