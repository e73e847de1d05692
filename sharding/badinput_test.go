package sharding

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

type unplaceable struct{ id string }

// Messages the extractor cannot place (an empty ID, an extractor that panics) go to dead
// letters, are counted, and the region keeps working.
func TestBadInputUnplaceableMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Counter", EntityConfig{
		Entity: actor.PropsOf(func() actor.Actor { return &counter{} }),
		Extractor: ExtractorFuncs{Entity: func(msg any) (EntityID, any) {
			m, ok := msg.(unplaceable)
			if !ok {
				return "", nil
			}
			if m.id == "panic" {
				panic("extractor bug")
			}
			return EntityID(m.id), get{}
		}, NumberOfShards: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []any{unplaceable{id: ""}, unplaceable{id: "panic"}, "not for me", Envelope{Message: get{}}, Envelope{EntityID: "x"}} {
		_ = region.Tell(m)
		dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
		if dl.Message != m || dl.Recipient != region || !errors.Is(dl.Reason, ErrUnplaceable) {
			t.Fatalf("dead letter %+v, want %v to the region, unplaceable", dl, m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := actor.Ask[int](ctx, region, unplaceable{id: "ok"}); err != nil || n != 0 {
		t.Fatalf("region after bad input: %d, %v", n, err)
	}
	st, _ := s.Stats("Counter")
	if st.Unplaceable != 5 {
		t.Fatalf("Unplaceable %d, want 5", st.Unplaceable)
	}
	// An ask that cannot be placed fails at once instead of timing out.
	if _, err := actor.Ask[int](ctx, region, unplaceable{id: ""}); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("ask of an unplaceable message: %v", err)
	}
}

// A region's buffer overflow (no shard can get a home) is counted and dead-lettered.
func TestBadInputBufferOverflowIsCounted(t *testing.T) {
	sys := testkit.NewSystem(t)
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Counter", EntityConfig{
		Entity:     actor.PropsOf(func() actor.Actor { return &counter{} }),
		MinMembers: 2, // never reached on one node: no shard gets a home
		BufferSize: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		_ = region.Tell(Envelope{EntityID: EntityID(rune('a' + i)), Message: incr{}})
	}
	for i := 5; i < 8; i++ {
		// The messages that did not fit, each with the reason, addressed to the region.
		dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
		want := Envelope{EntityID: EntityID(rune('a' + i)), Message: incr{}}
		if dl.Message != want || dl.Recipient != region || !errors.Is(dl.Reason, ErrBufferFull) {
			t.Fatalf("dead letter %+v, want %+v to the region, buffer full", dl, want)
		}
	}
	dead.ExpectNoMsg(100 * time.Millisecond)
	if st, _ := s.Stats("Counter"); st.BufferDropped != 3 {
		t.Fatalf("BufferDropped %d, want 3", st.BufferDropped)
	}
}

func TestBadInputConfiguration(t *testing.T) {
	props := actor.PropsOf(func() actor.Actor { return &counter{} })
	for _, c := range []struct {
		name string
		cfg  EntityConfig
	}{
		{"no entity", EntityConfig{}},
		{"both entity and factory", EntityConfig{Entity: props, EntityFactory: func(EntityID) *actor.Props { return props }}},
		{"invalid props", EntityConfig{Entity: &actor.Props{}}},
		{"negative shards", EntityConfig{Entity: props, NumberOfShards: -1}},
		{"negative min members", EntityConfig{Entity: props, MinMembers: -1}},
		{"negative buffer", EntityConfig{Entity: props, BufferSize: -1}},
		{"negative idle", EntityConfig{Entity: props, Passivation: Passivation{IdleTimeout: -time.Second}}},
		{"negative limit", EntityConfig{Entity: props, Passivation: Passivation{ActiveEntityLimit: -1}}},
		{"passivation with remember", EntityConfig{Entity: props, RememberEntities: true, Passivation: Passivation{IdleTimeout: time.Second}}},
		{"unknown store", EntityConfig{Entity: props, StateStoreMode: 7}},
		{"unknown remember store", EntityConfig{Entity: props, RememberEntitiesStore: 7}},
		{"negative timing", EntityConfig{Entity: props, Timings: Timings{HandOffTimeout: -1}}},
		{"bad role", EntityConfig{Entity: props, Role: "a,b"}},
	} {
		if err := c.cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", c.name, err)
		}
	}
	if err := (EntityConfig{Entity: props}).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if err := (ProxyConfig{BufferSize: -1}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("proxy: %v", err)
	}

	sys := testkit.NewSystem(t)
	if _, err := EntityRefFor[any](sys, "Counter", "1"); !errors.Is(err, ErrNotStarted) {
		t.Errorf("EntityRefFor before Start: %v", err)
	}
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(sys, Config{}); !errors.Is(err, ErrAlreadyStarted) {
		t.Errorf("second Start: %v", err)
	}
	if Get(sys) != s {
		t.Error("Get does not return the started extension")
	}
	for _, name := range []string{"", "a/b", "with space", "$x"} {
		if _, err := s.Start(name, EntityConfig{Entity: props}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("type name %q: %v", name, err)
		}
	}
	if _, err := s.Start("Counter", EntityConfig{Entity: props}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start("Counter", EntityConfig{Entity: props}); !errors.Is(err, ErrAlreadyStarted) {
		t.Errorf("type started twice: %v", err)
	}
	if _, err := s.Start("Journal", EntityConfig{Entity: props, StateStoreMode: StateStorePersistence}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("persistence mode without persistence: %v", err)
	}
	if _, err := EntityRefFor[any](sys, "Nope", "1"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("EntityRefFor of an unknown type: %v", err)
	}
	if _, err := EntityRefFor[any](sys, "Counter", ""); !errors.Is(err, ErrUnplaceable) {
		t.Errorf("EntityRefFor of an empty ID: %v", err)
	}
}
