package supervision_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/troupe-go/troupe/supervision"
)

func TestBackoffValidate(t *testing.T) {
	ok := supervision.Backoff{Min: time.Second, Max: time.Minute}
	tests := []struct {
		name  string
		edit  func(*supervision.Backoff)
		valid bool
	}{
		{"ok", func(*supervision.Backoff) {}, true},
		{"min equals max", func(b *supervision.Backoff) { b.Max = b.Min }, true},
		{"full options", func(b *supervision.Backoff) { b.RandomFactor = 1; b.ResetAfter = time.Hour; b.MaxRetries = 5 }, true},
		{"zero min", func(b *supervision.Backoff) { b.Min = 0 }, false},
		{"negative min", func(b *supervision.Backoff) { b.Min = -time.Second }, false},
		{"max below min", func(b *supervision.Backoff) { b.Max = b.Min - 1 }, false},
		{"negative random factor", func(b *supervision.Backoff) { b.RandomFactor = -0.1 }, false},
		{"random factor above 1", func(b *supervision.Backoff) { b.RandomFactor = 1.1 }, false},
		{"NaN random factor", func(b *supervision.Backoff) { b.RandomFactor = math.NaN() }, false},
		{"negative reset", func(b *supervision.Backoff) { b.ResetAfter = -1 }, false},
		{"negative retries", func(b *supervision.Backoff) { b.MaxRetries = -1 }, false},
		{"zero value", func(b *supervision.Backoff) { *b = supervision.Backoff{} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ok
			tt.edit(&b)
			err := b.Validate()
			if tt.valid && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tt.valid && !errors.Is(err, supervision.ErrInvalidBackoff) {
				t.Fatalf("Validate() = %v, want an error wrapping ErrInvalidBackoff", err)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	week := 7 * 24 * time.Hour
	tests := []struct {
		name  string
		b     supervision.Backoff
		count int
		rnd   float64
		want  time.Duration
	}{
		{"first restart is Min", supervision.Backoff{Min: 5 * time.Second, Max: week}, 0, 0, 5 * time.Second},
		{"doubles", supervision.Backoff{Min: 5 * time.Second, Max: week}, 1, 0, 10 * time.Second},
		{"5s to a week, restart 2 is 20s", supervision.Backoff{Min: 5 * time.Second, Max: week}, 2, 0, 20 * time.Second},
		{"capped at Max", supervision.Backoff{Min: time.Second, Max: 30 * time.Second}, 5, 0, 30 * time.Second},
		{"just under Max", supervision.Backoff{Min: time.Second, Max: 30 * time.Second}, 4, 0, 16 * time.Second},
		{"exactly Max", supervision.Backoff{Min: time.Second, Max: 32 * time.Second}, 5, 0, 32 * time.Second},
		{"count 62", supervision.Backoff{Min: 1, Max: math.MaxInt64}, 62, 0, 1 << 62},
		{"count 63", supervision.Backoff{Min: 1, Max: math.MaxInt64}, 63, 0, math.MaxInt64},
		{"huge count", supervision.Backoff{Min: 5 * time.Second, Max: week}, 10_000, 0, week},
		{"max int count", supervision.Backoff{Min: time.Nanosecond, Max: math.MaxInt64}, math.MaxInt, 0.5, math.MaxInt64},
		{"negative count is 0", supervision.Backoff{Min: time.Second, Max: time.Minute}, -3, 0, time.Second},
		{"jitter", supervision.Backoff{Min: time.Second, Max: time.Minute, RandomFactor: 0.5}, 1, 0.5, 2500 * time.Millisecond},
		{"jitter zero factor", supervision.Backoff{Min: time.Second, Max: time.Minute}, 1, 0.9, 2 * time.Second},
		{"jitter capped at Max", supervision.Backoff{Min: time.Second, Max: 3 * time.Second, RandomFactor: 1}, 1, 0.9, 3 * time.Second},
		{"jitter on Max stays Max", supervision.Backoff{Min: time.Second, Max: 3 * time.Second, RandomFactor: 1}, 9, 0.9, 3 * time.Second},
		{"rnd above 1 clamped", supervision.Backoff{Min: time.Second, Max: time.Minute, RandomFactor: 0.5}, 0, 7, 1500 * time.Millisecond},
		{"negative rnd clamped", supervision.Backoff{Min: time.Second, Max: time.Minute, RandomFactor: 0.5}, 0, -1, time.Second},
		{"NaN rnd", supervision.Backoff{Min: time.Second, Max: time.Minute, RandomFactor: 0.5}, 0, math.NaN(), time.Second},
		{"invalid: zero value", supervision.Backoff{}, 3, 0.5, 0},
		{"invalid: max below min", supervision.Backoff{Min: time.Minute, Max: time.Second}, 0, 0, time.Second},
		{"invalid: negative max", supervision.Backoff{Min: time.Second, Max: -time.Second}, 0, 0, 0},
		{"invalid: NaN factor", supervision.Backoff{Min: time.Second, Max: time.Minute, RandomFactor: math.NaN()}, 0, 0.5, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Delay(tt.count, tt.rnd); got != tt.want {
				t.Fatalf("%+v.Delay(%d, %v) = %v, want %v", tt.b, tt.count, tt.rnd, got, tt.want)
			}
		})
	}
}

func TestBackoffDelayJitterBounds(t *testing.T) {
	b := supervision.Backoff{Min: 100 * time.Millisecond, Max: time.Hour, RandomFactor: 0.2}
	for count := range 40 {
		base := b.Delay(count, 0)
		upper := min(b.Max, time.Duration(float64(base)*1.2))
		prev := base
		for _, rnd := range []float64{0, 0.1, 0.25, 0.5, 0.75, 0.999999} {
			d := b.Delay(count, rnd)
			if d < base || d > upper || d < prev {
				t.Fatalf("Delay(%d, %v) = %v, want in [%v, %v] and not below %v", count, rnd, d, base, upper, prev)
			}
			prev = d
		}
		if count > 0 && base < b.Delay(count-1, 0) {
			t.Fatalf("Delay(%d, 0) = %v is below Delay(%d, 0)", count, base, count-1)
		}
	}
}
