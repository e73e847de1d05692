package membership

import (
	"testing"

	"github.com/troupe-go/troupe/member"
)

func TestNextUpNumber(t *testing.T) {
	tests := []struct {
		name string
		now  int64
		seen []member.Member
		want int64
	}{
		{"clock when nothing seen", 1000, nil, 1000},
		{"clock above seen", 1000, []member.Member{mem("a:1", member.Up, 900)}, 1000},
		{"seen+1 when clock behind", 1000, []member.Member{mem("a:1", member.Up, 1200), mem("b:1", member.Up, 1100)}, 1201},
		{"equal to clock", 1000, []member.Member{mem("a:1", member.Up, 1000)}, 1001},
		{"never below 1", -5, nil, 1},
	}
	for _, tt := range tests {
		if got := NextUpNumber(tt.now, tt.seen); got != tt.want {
			t.Errorf("%s: NextUpNumber = %d, want %d", tt.name, got, tt.want)
		}
	}
}
