package discovery

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fixed is a Discovery with a set answer that counts its calls.
type fixed struct {
	ts    []Target
	err   error
	calls *int
}

func (f fixed) Lookup(context.Context, Lookup) ([]Target, error) {
	if f.calls != nil {
		*f.calls++
	}
	return f.ts, f.err
}

func TestAggregateFirstNonEmptyAnswer(t *testing.T) {
	var thirdCalls int
	boom := errors.New("boom")
	a := Aggregate{Sources: []Discovery{
		nil,
		fixed{err: boom},
		fixed{}, // empty, no error
		Static{Services: map[string][]string{"s": {"b:2", "a:1", "b:2"}}},
		fixed{ts: []Target{{"z", 9}}, calls: &thirdCalls},
	}}
	got, err := a.Lookup(context.Background(), Lookup{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Target{{"a", 1}, {"b", 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if thirdCalls != 0 {
		t.Fatalf("a source after the first answer was asked")
	}
}

func TestAggregateSortsAnOtherwiseUnsortedSource(t *testing.T) {
	src := []Target{{"b", 1}, {"a", 1}, {"b", 1}}
	a := Aggregate{Sources: []Discovery{fixed{ts: src}}}
	got, err := a.Lookup(context.Background(), Lookup{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Target{{"a", 1}, {"b", 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if src[0].Host != "b" {
		t.Fatalf("the source's slice was changed: %v", src)
	}
}

func TestAggregateJoinsErrors(t *testing.T) {
	boom := errors.New("boom")
	a := Aggregate{Sources: []Discovery{fixed{err: boom}, Static{}}}
	_, err := a.Lookup(context.Background(), Lookup{Service: "s"})
	if !errors.Is(err, boom) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v; want it to wrap both boom and ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "source 0") || !strings.Contains(err.Error(), "source 1") {
		t.Fatalf("err %q does not name the sources", err)
	}
	only := Aggregate{Sources: []Discovery{fixed{err: boom}}}
	if _, err := only.Lookup(context.Background(), Lookup{Service: "s"}); errors.Is(err, ErrNotFound) || !errors.Is(err, boom) {
		t.Fatalf("a failure alone: %v; want boom without ErrNotFound", err)
	}
	if _, err := (Aggregate{}).Lookup(context.Background(), Lookup{Service: "s"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no sources: %v, want ErrNotFound", err)
	}
}

func TestAggregateStopsWhenContextEnds(t *testing.T) {
	var calls int
	ctx, cancel := context.WithCancel(context.Background())
	a := Aggregate{Sources: []Discovery{
		fixed{err: errors.New("first")},
		fixed{ts: []Target{{"x", 1}}, calls: &calls},
	}}
	cancel()
	if _, err := a.Lookup(ctx, Lookup{Service: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if calls != 0 {
		t.Fatal("a source was asked after the context ended")
	}
}
