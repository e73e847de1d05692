package remote

import (
	"context"
	"time"

	"github.com/troupe-go/troupe/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the transport's metrics.
const MeterName = "github.com/troupe-go/troupe/remote"

// remoteMetrics are the transport's instruments while the system has a MeterProvider.
// The counts themselves are the counters behind Stats, read in one callback; only the
// heartbeat round trip is recorded as it happens (once per heartbeat interval and
// watched peer).
type remoteMetrics struct {
	rtt metric.Float64Histogram
}

// Drop reasons, the values of the reason attribute of troupe.remote.drops.
var dropReasons = struct{ overloaded, lost, refusedSender, other metric.ObserveOption }{
	overloaded:    metric.WithAttributes(attribute.String("reason", "overloaded")),
	lost:          metric.WithAttributes(attribute.String("reason", "lost")),
	refusedSender: metric.WithAttributes(attribute.String("reason", "refused_sender")),
	other:         metric.WithAttributes(attribute.String("reason", "other")),
}

// peerAttr is the attribute naming a peer system: bounded by the cluster's size.
func peerAttr(p *peer) attribute.KeyValue { return attribute.String("peer", p.self) }

// startMetrics creates the instruments when the system has a MeterProvider.
func (r *Remote) startMetrics() {
	mp := r.sys.MeterProvider()
	if mp == nil {
		return
	}
	mt := mp.Meter(MeterName)
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	msgsOut, err := mt.Int64ObservableCounter("troupe.remote.messages.sent", metric.WithUnit("{message}"),
		metric.WithDescription("Messages written to a peer system (user and system lanes), by peer."))
	check(err)
	bytesOut, err := mt.Int64ObservableCounter("troupe.remote.bytes.sent", metric.WithUnit("By"),
		metric.WithDescription("Bytes written to a peer system, frame headers included, by peer."))
	check(err)
	msgsIn, err := mt.Int64ObservableCounter("troupe.remote.messages.received", metric.WithUnit("{message}"),
		metric.WithDescription("Frames read from a peer system (messages, acknowledgements and heartbeats), by peer."))
	check(err)
	bytesIn, err := mt.Int64ObservableCounter("troupe.remote.bytes.received", metric.WithUnit("By"),
		metric.WithDescription("Bytes read from a peer system, frame headers included, by peer."))
	check(err)
	queued, err := mt.Int64ObservableUpDownCounter("troupe.remote.outbound.queued", metric.WithUnit("By"),
		metric.WithDescription("Bytes of user messages queued for a peer and not yet written, by peer."))
	check(err)
	drops, err := mt.Int64ObservableCounter("troupe.remote.drops", metric.WithUnit("{message}"),
		metric.WithDescription("Messages the transport could not send or deliver, by reason: overloaded (outbound queue full), lost (in a write when the connection broke), refused_sender, other (unregistered type, too large, quarantined or unreachable peer, missing recipient)."))
	check(err)
	reconnects, err := mt.Int64ObservableCounter("troupe.remote.reconnects", metric.WithUnit("{connection}"),
		metric.WithDescription("Outbound connections established after the first, per lane."))
	check(err)
	quarantines, err := mt.Int64ObservableCounter("troupe.remote.quarantines", metric.WithUnit("{incarnation}"),
		metric.WithDescription("Peer incarnations quarantined."))
	check(err)
	refused, err := mt.Int64ObservableCounter("troupe.remote.handshakes.refused", metric.WithUnit("{connection}"),
		metric.WithDescription("Inbound connections refused in the handshake, closed for a malformed frame, or closed before their handshake to admit newer ones."))
	check(err)
	m := &remoteMetrics{}
	m.rtt, err = mt.Float64Histogram("troupe.remote.heartbeat.rtt", metric.WithUnit("s"),
		metric.WithDescription("Round trip of the transport's heartbeats to peers with watched actors, outside a cluster (in a cluster, the membership layer probes members)."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	check(err)
	check(telemetry.Observe(r.sys.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		c := &r.stats
		for _, p := range r.peerList() {
			at := metric.WithAttributes(peerAttr(p))
			o.ObserveInt64(msgsOut, int64(p.stats.msgsOut.Load()), at)
			o.ObserveInt64(bytesOut, int64(p.stats.bytesOut.Load()), at)
			o.ObserveInt64(msgsIn, int64(p.stats.msgsIn.Load()), at)
			o.ObserveInt64(bytesIn, int64(p.stats.bytesIn.Load()), at)
			o.ObserveInt64(queued, int64(p.user.queuedBytes()), at)
		}
		dead, over, lost, ref := c.deadLetters.Load(), c.overloaded.Load(), c.lost.Load(), c.refusedSenders.Load()
		other := int64(dead) - int64(over) - int64(lost) - int64(ref)
		o.ObserveInt64(drops, int64(over), dropReasons.overloaded)
		o.ObserveInt64(drops, int64(lost), dropReasons.lost)
		o.ObserveInt64(drops, int64(ref), dropReasons.refusedSender)
		o.ObserveInt64(drops, max(other, 0), dropReasons.other)
		o.ObserveInt64(reconnects, int64(c.reconnects.Load()))
		o.ObserveInt64(quarantines, int64(c.quarantines.Load()))
		o.ObserveInt64(refused, int64(c.rejected.Load()))
		return nil
	}, msgsOut, bytesOut, msgsIn, bytesIn, queued, drops, reconnects, quarantines, refused))
	telemetry.Report(r.log, "remote", errs)
	r.metrics = m
}

// heartbeatSent notes when a heartbeat left for p, to time its answer.
func (p *peer) heartbeatSent(now time.Time) {
	if p.r.metrics != nil {
		p.hbSent.Store(now.UnixNano())
	}
}

// heartbeatAnswered records the round trip of the heartbeat p has just answered.
func (p *peer) heartbeatAnswered(now time.Time) {
	m := p.r.metrics
	if m == nil {
		return
	}
	if sent := p.hbSent.Swap(0); sent != 0 {
		m.rtt.Record(context.Background(), time.Duration(now.UnixNano()-sent).Seconds(), metric.WithAttributes(peerAttr(p)))
	}
}
