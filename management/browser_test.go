package management_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/troupe-go/troupe/testkit"
)

// A headless Chromium for the tests of the live cluster page, driven with chromedp.

// browserNames are the commands looked for on PATH, in order: Debian's and Ubuntu's
// chromium, then the names chromedp itself tries.
var browserNames = []string{
	"chromium", "chromium-browser", "headless_shell", "headless-shell", "google-chrome",
	"google-chrome-stable", "chrome",
}

// findBrowser returns the path of a Chromium-based browser: $TROUPE_BROWSER when set,
// else the first of browserNames on PATH; "" when there is none.
func findBrowser() string {
	if p := os.Getenv("TROUPE_BROWSER"); p != "" {
		return p
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// inCI reports whether the tests run in CI ($CI set, as .ci/run and the usual CI
// services do): there a missing browser fails the test instead of skipping it.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// newBrowser starts a headless browser with one tab and returns its chromedp context.
// Without a browser the test is skipped, or fails in CI. The browser is stopped, and
// its goroutines ended, when the test ends.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := findBrowser()
	if path == "" {
		msg := "no Chromium found (looked for " + strings.Join(browserNames, ", ") + " on PATH, and $TROUPE_BROWSER); " +
			"install Debian's chromium (apt-get install chromium)"
		if inCI() {
			t.Fatal(msg + "; CI is set, so the page test cannot be skipped")
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1200, 900),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		if err := chromedp.Cancel(ctx); err != nil {
			t.Logf("stopping the browser: %v", err)
		}
		cancelCtx()
		cancelAlloc()
	})
	// The first action starts the browser; it must not run under a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// pageWait evaluates the JavaScript expression in the page until it is truthy (the
// page polls it every 50ms) and returns its value; after the dilated timeout it fails
// the test, saying what it waited for and what state shows (the state expression).
func pageWait[T any](t *testing.T, ctx context.Context, what, expr, state string) T {
	t.Helper()
	timeout := testkit.Dilated(45 * time.Second)
	start := time.Now()
	defer func() { t.Logf("the page showed %s after %v", what, time.Since(start).Round(time.Millisecond)) }()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[any](state))
		t.Fatalf("the page did not show %s within %v: %v\nthe page shows: %v", what, timeout, err, got)
	}
	return v
}
