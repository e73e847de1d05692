package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/troupe-go/troupe/management"
)

// The commands that call the management server: each asks its route through the
// client and prints the answer, as a table or, with -json, as it came.

// show prints an answer: its body with -json, else what render makes of it.
func show[T any](s *session, r reply[T], err error, render func(io.Writer, T) error) error {
	if err != nil {
		return err
	}
	if s.opts.json {
		_, err := s.stdout.Write(r.Body)
		return err
	}
	return render(s.stdout, r.Value)
}

func cmdMembers(ctx context.Context, s *session, _ []string) error {
	r, err := s.client.Members(ctx)
	return show(s, r, err, renderMembers)
}

func cmdMember(ctx context.Context, s *session, args []string) error {
	addr, err := s.memberAddress(ctx, args[0])
	if err != nil {
		return err
	}
	r, err := s.client.Member(ctx, addr)
	return show(s, r, err, renderMember)
}

func cmdLeave(ctx context.Context, s *session, args []string) error {
	addr, err := s.memberAddress(ctx, args[0])
	if err != nil {
		return err
	}
	r, err := s.client.Leave(ctx, addr)
	return show(s, r, err, renderMessage)
}

func cmdDown(ctx context.Context, s *session, args []string) error {
	addr, err := s.memberAddress(ctx, args[0])
	if err != nil {
		return err
	}
	r, err := s.client.Down(ctx, addr)
	return show(s, r, err, renderMessage)
}

// memberAddress returns the member address arg names: arg itself when it has a system
// name (troupe://system@host:port or system@host:port), or the address of the one
// member at arg's host:port, which it asks the server for.
func (s *session) memberAddress(ctx context.Context, arg string) (string, error) {
	if strings.Contains(arg, "@") {
		return arg, nil
	}
	if strings.Contains(arg, "://") || !strings.Contains(arg, ":") {
		return "", &usageError{fmt.Sprintf("member address %q: want troupe://system@host:port, system@host:port or host:port", arg)}
	}
	r, err := s.client.Members(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range r.Value.Members {
		if strings.HasSuffix(m.Node, "@"+arg) {
			return m.Node, nil
		}
	}
	return "", &notFoundError{fmt.Sprintf("no member at %s (the node at %s knows %d members: troupe members lists them)",
		arg, s.client.base, len(r.Value.Members))}
}

func cmdShards(ctx context.Context, s *session, args []string) error {
	if len(args) == 0 {
		if s.sub.detail || s.sub.local {
			return &usageError{"-detail and -local need an entity type: troupe shards [flags] TYPE"}
		}
		r, err := s.client.EntityTypes(ctx)
		return show(s, r, err, renderEntityTypes)
	}
	if s.sub.local {
		r, err := s.client.Region(ctx, args[0])
		return show(s, r, err, renderRegion)
	}
	r, err := s.client.ShardStats(ctx, args[0])
	return show(s, r, err, func(w io.Writer, v management.ClusterShardsView) error {
		return renderShardStats(w, v, s.sub.detail)
	})
}

func cmdSingletons(ctx context.Context, s *session, _ []string) error {
	r, err := s.client.Singletons(ctx)
	return show(s, r, err, renderSingletons)
}

// cmdEvents follows the event stream until ctx ends (an interrupt): that is its normal
// end, with exit code 0. The server ending the stream is an error.
func cmdEvents(ctx context.Context, s *session, _ []string) error {
	var types []string
	for t := range strings.SplitSeq(s.sub.types, ",") {
		if t = strings.TrimSpace(t); t != "" {
			types = append(types, t)
		}
	}
	opened := func() {
		fmt.Fprintf(s.stderr, "troupe: following the events of %s; interrupt to stop\n", s.client.base)
	}
	err := s.client.Events(ctx, types, opened, func(ev management.Event, data []byte) error {
		if s.opts.json {
			_, err := fmt.Fprintf(s.stdout, "%s\n", data)
			return err
		}
		return renderEvent(s.stdout, ev)
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
