package discovery

import "testing"

// FuzzParseTarget checks that ParseTarget never panics, and that what it accepts comes
// back the same through Target.String.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"10.0.0.1:7946", "host", "[::1]:80", "fd00::5", "[fd00::5]", "a:b:c",
		"host:0", "[fe80::1%eth0]:80", "[[a]:1", "[x]", ":1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			return
		}
		if tg.Host == "" || tg.Port < 0 || tg.Port > 65535 {
			t.Fatalf("ParseTarget(%q) = %+v", s, tg)
		}
		again, err := ParseTarget(tg.String())
		if err != nil || again != tg {
			t.Fatalf("ParseTarget(%q) = %+v, whose String %q parses to %+v, %v", s, tg, tg.String(), again, err)
		}
	})
}
