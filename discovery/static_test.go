package discovery

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	good := map[string]Target{
		"10.0.0.1:7946":    {Host: "10.0.0.1", Port: 7946},
		"10.0.0.1":         {Host: "10.0.0.1"},
		"node-1.example":   {Host: "node-1.example"},
		"node-1:1":         {Host: "node-1", Port: 1},
		"[::1]:65535":      {Host: "::1", Port: 65535},
		"[fd00::5]":        {Host: "fd00::5"},
		"fd00::5":          {Host: "fd00::5"},
		"node.example:080": {Host: "node.example", Port: 80},
	}
	for in, want := range good {
		got, err := ParseTarget(in)
		if err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := []string{"", ":7946", "host:", "host:0", "host:65536", "host:http", "host:-1",
		"a:b:c", "[10.0.0.1]", "[::1", "host name", "host\x00", "h\u00a0x", "10.0.0.1:7946/x", "[::1]:x"}
	for _, in := range bad {
		if got, err := ParseTarget(in); err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "discovery:") {
			t.Errorf("ParseTarget(%q): error %q does not say where it comes from", in, err)
		}
	}
}

func TestStaticLookupSortsAndDeduplicates(t *testing.T) {
	s := Static{Services: map[string][]string{
		"a": {"10.0.0.2:2", "10.0.0.1:9", "10.0.0.2:1", "10.0.0.1:9", "10.0.0.10", "10.0.0.2:1"},
	}}
	got, err := s.Lookup(context.Background(), Lookup{Service: "a", PortName: "ignored", Protocol: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{"10.0.0.1", 9}, {"10.0.0.10", 0}, {"10.0.0.2", 1}, {"10.0.0.2", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The answer is a copy: changing it does not change the next one.
	got[0].Host = "changed"
	again, _ := s.Lookup(context.Background(), Lookup{Service: "a"})
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("second lookup %v, want %v", again, want)
	}
}

func TestStaticNotFound(t *testing.T) {
	s := Static{Services: map[string][]string{"empty": {}}}
	for _, name := range []string{"missing", "empty"} {
		_, err := s.Lookup(context.Background(), Lookup{Service: name})
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err %v, want ErrNotFound", name, err)
		}
	}
	var zero Static
	if _, err := zero.Lookup(context.Background(), Lookup{Service: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("zero Static: err %v, want ErrNotFound", err)
	}
}

func TestStaticBadEntries(t *testing.T) {
	s := Static{Services: map[string][]string{
		"ok":  {"10.0.0.1:1"},
		"bad": {"10.0.0.1:1", "host:99999", "x:y:z"},
	}}
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "host:99999") ||
		!strings.Contains(err.Error(), "x:y:z") {
		t.Fatalf("Validate: %v; want both bad addresses of service \"bad\" named", err)
	}
	if _, err := s.Lookup(context.Background(), Lookup{Service: "bad"}); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup of a bad entry: %v; want a parse error, not ErrNotFound", err)
	}
	if _, err := s.Lookup(context.Background(), Lookup{Service: "ok"}); err != nil {
		t.Fatalf("a good service beside a bad one: %v", err)
	}
	if err := (Static{Services: map[string][]string{"ok": {"a:1"}}}).Validate(); err != nil {
		t.Fatalf("Validate of a good table: %v", err)
	}
}

func TestStaticEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := Static{Services: map[string][]string{"a": {"h:1"}}}
	if _, err := s.Lookup(ctx, Lookup{Service: "a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
