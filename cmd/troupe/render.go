package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/troupe-go/troupe/management"
)

// The renderers: one per command, each turning the management server's answer into
// what a person reads (tables through text/tabwriter). They are pure: the same answer
// always prints the same text.

// table returns a tabwriter for a table on w; Flush it at the end.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// orDash is s, or "-" for an empty one (a table's empty cell).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ageOrDash is an age order, or "-" before the member is Up.
func ageOrDash(age int) string {
	if age == 0 {
		return "-"
	}
	return strconv.Itoa(age)
}

// renderMembers prints GET /cluster/members: one row per member (the answering node
// and the oldest noted), then the unreachable members with their observers and the
// oldest member of each role.
func renderMembers(w io.Writer, v management.MembersView) error {
	unreachable := map[string][]string{}
	for _, u := range v.Unreachable {
		unreachable[u.Node] = u.ObservedBy
	}
	tw := table(w)
	fmt.Fprintln(tw, "NODE\tSTATUS\tAGE\tROLES\tREACHABLE\tNOTE")
	for _, m := range v.Members {
		reachable := "yes"
		if _, ok := unreachable[m.Node]; ok {
			reachable = "no"
		}
		var notes []string
		if m.Node == v.SelfNode {
			notes = append(notes, "answered")
		}
		if m.Node == v.Oldest {
			notes = append(notes, "oldest")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Node, m.Status, ageOrDash(m.AgeOrder),
			orDash(strings.Join(m.Roles, ",")), reachable, strings.Join(notes, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range v.Unreachable {
		fmt.Fprintf(w, "unreachable: %s, as seen by %s\n", u.Node, orDash(strings.Join(u.ObservedBy, ", ")))
	}
	for _, role := range slices.Sorted(maps.Keys(v.OldestPerRole)) {
		fmt.Fprintf(w, "oldest with role %s: %s\n", role, orDash(v.OldestPerRole[role]))
	}
	return nil
}

// renderMember prints GET /cluster/members/{address} as one field per line.
func renderMember(w io.Writer, m management.MemberView) error {
	tw := table(w)
	fmt.Fprintf(tw, "node:\t%s\n", m.Node)
	fmt.Fprintf(tw, "uid:\t%s\n", m.NodeUID)
	fmt.Fprintf(tw, "status:\t%s\n", m.Status)
	fmt.Fprintf(tw, "roles:\t%s\n", orDash(strings.Join(m.Roles, ",")))
	fmt.Fprintf(tw, "age order:\t%s\n", ageOrDash(m.AgeOrder))
	fmt.Fprintf(tw, "up number:\t%d\n", m.UpNumber)
	if m.AppVersion != "" {
		fmt.Fprintf(tw, "app version:\t%s\n", m.AppVersion)
	}
	return tw.Flush()
}

// renderMessage prints the answer of leave and down.
func renderMessage(w io.Writer, m management.MessageView) error {
	_, err := fmt.Fprintln(w, m.Message)
	return err
}

// renderEntityTypes prints GET /cluster/shards: the entity types of the asked node.
func renderEntityTypes(w io.Writer, v management.EntityTypesView) error {
	if len(v.EntityTypes) == 0 {
		_, err := fmt.Fprintf(w, "no entity type is started on %s\n", orDash(v.SelfNode))
		return err
	}
	tw := table(w)
	fmt.Fprintln(tw, "ENTITY TYPE\tREGION")
	for _, t := range v.EntityTypes {
		kind := "region"
		if t.Proxy {
			kind = "proxy"
		}
		fmt.Fprintf(tw, "%s\t%s\n", t.Name, kind)
	}
	return tw.Flush()
}

// entities sums the entity counts of shards.
func entities(shards []management.ShardView) int {
	n := 0
	for _, s := range shards {
		n += s.EntityCount
	}
	return n
}

// renderShardStats prints GET /cluster/shards/{type}/stats: shards and entities per
// node and in total, or with detail one row per shard; then what did not answer.
func renderShardStats(w io.Writer, v management.ClusterShardsView, detail bool) error {
	tw := table(w)
	if detail {
		fmt.Fprintln(tw, "NODE\tSHARD\tENTITIES")
		for _, r := range v.Regions {
			for _, s := range r.Shards {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", r.Node, s.ShardID, s.EntityCount)
			}
		}
	} else {
		fmt.Fprintln(tw, "NODE\tSHARDS\tENTITIES")
		shards, total := 0, 0
		for _, r := range v.Regions {
			n := entities(r.Shards)
			fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Node, len(r.Shards), n)
			shards += len(r.Shards)
			total += n
		}
		fmt.Fprintf(tw, "total\t%d\t%d\n", shards, total)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range v.Regions {
		if len(r.Failed) > 0 {
			fmt.Fprintf(w, "shards of %s that did not answer in time: %s\n", r.Node, strings.Join(r.Failed, ", "))
		}
	}
	if len(v.Failed) > 0 {
		fmt.Fprintf(w, "nodes that did not answer in time: %s\n", strings.Join(v.Failed, ", "))
	}
	return nil
}

// renderRegion prints GET /cluster/shards/{type}: the asked node's shards.
func renderRegion(w io.Writer, v management.RegionView) error {
	tw := table(w)
	fmt.Fprintln(tw, "SHARD\tENTITIES")
	for _, s := range v.Shards {
		fmt.Fprintf(tw, "%s\t%d\n", s.ShardID, s.EntityCount)
	}
	fmt.Fprintf(tw, "total\t%d\n", entities(v.Shards))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Failed) > 0 {
		fmt.Fprintf(w, "shards that did not answer in time: %s\n", strings.Join(v.Failed, ", "))
	}
	return nil
}

// renderSingletons prints GET /cluster/singletons: where each singleton runs, and the
// state of the asked node's manager of it.
func renderSingletons(w io.Writer, v management.SingletonsView) error {
	if len(v.Singletons) == 0 {
		_, err := fmt.Fprintf(w, "no singleton has a manager on %s\n", orDash(v.SelfNode))
		return err
	}
	tw := table(w)
	fmt.Fprintln(tw, "SINGLETON\tNODE\tMANAGER STATE")
	for _, s := range v.Singletons {
		state := s.State
		if s.Stopped {
			state += " (stopped)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, orDash(s.Node), state)
	}
	return tw.Flush()
}

// eventTimeLayout is the time of an event line: UTC, to the millisecond.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// renderEvent prints one event of GET /cluster/events as one line: its time, its type
// and what it is about.
func renderEvent(w io.Writer, ev management.Event) error {
	_, err := fmt.Fprintf(w, "%s  %s  %s\n", ev.Time.UTC().Format(eventTimeLayout), ev.Type, eventDetail(ev))
	return err
}

// eventDetail is what an event is about, in words.
func eventDetail(ev management.Event) string {
	switch {
	case ev.Member != nil:
		s := ev.Member.Node + " " + ev.Member.Status
		if ev.PreviousStatus != "" {
			s += " (was " + ev.PreviousStatus + ")"
		}
		return s
	case ev.Type == management.EventOldestChanged:
		s := "oldest " + orDash(ev.Oldest)
		if ev.Role != "" {
			s = "oldest with role " + ev.Role + ": " + orDash(ev.Oldest)
		}
		return s
	case ev.Downing != nil:
		d := ev.Downing
		s := d.Strategy + " decided " + d.Action
		if d.Unstable {
			s += " (reachability did not settle)"
		}
		return s + ": downing " + strings.Join(d.Down, ", ")
	case ev.Shard != nil:
		return shardDetail(*ev.Shard)
	case ev.Singleton != nil:
		s := ev.Singleton
		where := "runs on " + orDash(s.Node)
		if s.Stopped {
			where = "manager stopped"
		}
		return fmt.Sprintf("%s %s (manager %s)", s.Name, where, s.State)
	}
	return ""
}

// shardDetail is a rebalance event in words.
func shardDetail(s management.ShardEventView) string {
	out := s.TypeName + " shard " + s.Shard
	if s.From != "" {
		out += " from " + s.From
	}
	if s.To != "" {
		out += " to " + s.To
	}
	if s.Rebalance {
		out += " (rebalance)"
	}
	if s.DurationMs > 0 {
		out += " in " + time.Duration(s.DurationMs*float64(time.Millisecond)).Round(time.Millisecond).String()
	}
	return out
}
