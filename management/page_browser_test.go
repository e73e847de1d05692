package management_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/management"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// pageView is what the live cluster page shows, read from its DOM by pageState.
type pageView struct {
	Members []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
		Roles  string `json:"roles"`
	} `json:"members"`
	Shards []struct {
		Node     string `json:"node"`
		Shards   int    `json:"shards"`
		Entities int    `json:"entities"`
	} `json:"shards"`
	Singletons []struct {
		Name string `json:"name"`
		Node string `json:"node"`
	} `json:"singletons"`
	Events []struct {
		Type string `json:"type"`
		Node string `json:"node"`
	} `json:"events"`
	LeaveButtons int    `json:"leaveButtons"`
	Stream       string `json:"stream"`
	Notice       string `json:"notice"`
	Problems     string `json:"problems"`
	DialogOpen   bool   `json:"dialogOpen"`
	ConfirmError string `json:"confirmError"`
	// Injected is true if markup from the cluster became an element.
	Injected bool `json:"injected"`
	// Load is the mark the test leaves in the page's window: gone after a reload.
	Load string `json:"load"`
}

// pageState is a JavaScript expression whose value is the page's pageView (entity
// type Counter's shards).
const pageState = `(() => {
  const all = (sel) => [...document.querySelectorAll(sel)];
  return {
    members: all("#members tbody tr").map((r) => ({
      node: r.dataset.node, status: r.dataset.status, roles: r.cells[2].textContent })),
    shards: all('#shards section[data-type="Counter"] li').map((li) => ({
      node: li.dataset.node, shards: Number(li.dataset.shards), entities: Number(li.dataset.entities) })),
    singletons: all("#singletons tbody tr").map((r) => ({ name: r.dataset.name || "", node: r.dataset.node || "" })),
    events: all("#events li").map((li) => ({ type: li.dataset.type, node: li.dataset.node })),
    leaveButtons: all('#members button[data-op="Leave"]').length,
    stream: document.getElementById("stream-state").textContent,
    notice: document.getElementById("notice").textContent,
    problems: document.getElementById("problems").textContent,
    dialogOpen: document.getElementById("confirm").open,
    confirmError: document.getElementById("confirm-error").hidden ? "" : document.getElementById("confirm-error").textContent,
    injected: document.querySelector("main i") !== null,
    load: String(window.troupeTestLoad || ""),
  };
})()`

// pageWhen is a JavaScript expression: the page's state when cond (an expression of
// s, the state) holds, else null.
func pageWhen(cond string) string {
	return "((s) => (" + cond + ") ? s : null)(" + pageState + ")"
}

// markupRole is a role that would become an element if the page rendered HTML.
const markupRole = "<i>markup</i>"

// TestClusterPageInABrowser opens the live cluster page of node 0 of a real three-node
// cluster (sharding with entities on every node, a singleton) in headless Chromium: it
// lists the three members, the Counter shards of each node and where the singletons
// run. Then an operator makes another node leave with the page's Leave button and
// the token; without a reload the page shows the member leave (its row goes, the
// event log shows member-left and member-removed) and every shard counted on the two
// nodes left.
func TestClusterPageInABrowser(t *testing.T) {
	ctx := newBrowser(t) // first: without a browser, skip (or fail in CI) before starting a cluster
	reg := testRegistry(t)
	mc := multinode.Start(t, multinode.Options{Nodes: 3, Registry: reg, Configure: func(i int, c *cluster.Config) {
		c.Roles = []string{[]string{"web", "worker"}[i%2]}
	}})
	nodes := []*node{
		startServices(t, reg, mc.Node(0), management.Config{EnableWrites: true, Token: token}),
		startServices(t, reg, mc.Node(1), management.Config{}),
		startServices(t, reg, mc.Node(2), management.Config{}),
	}
	for _, n := range nodes {
		awaitManagers(t, n.Node)
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	for i, id := range ids {
		ask(t, nodes[i%3].region, id)
	}
	oldest := mc.Node(0).Cluster.State().Oldest.Unique.Addr
	// The member that leaves: neither node 0, whose page is open, nor the oldest, so
	// that the singletons and the coordinator stay where they are.
	leaver := nodes[2]
	if selfOf(leaver.Node) == oldest {
		leaver = nodes[1]
	}
	gone := selfOf(leaver.Node)

	if err := chromedp.Do(ctx, chromedp.Navigate(nodes[0].mgmt.URL()+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.troupeTestLoad = "first"; true`)); err != nil {
		t.Fatal(err)
	}
	entities := strconv.Itoa(len(ids))
	v := pageWait[pageView](t, ctx, "three members Up, their shards and the singletons", pageWhen(`
		s.stream === "live" && s.members.length === 3 && s.members.every((m) => m.status === "Up") &&
		s.leaveButtons === 3 && s.shards.length === 3 &&
		s.shards.reduce((n, r) => n + r.entities, 0) === `+entities+` &&
		s.singletons.length === 2 && s.singletons.every((x) => x.node === `+strconv.Quote(oldest)+`)`), pageState)
	shards := 0
	for _, r := range v.Shards {
		shards += r.Shards
	}
	var stats management.ClusterShardsView
	getJSON(t, client(t), nodes[0].mgmt.URL()+"/cluster/shards/Counter/stats", 200, &stats)
	if len(stats.Regions) != len(v.Shards) {
		t.Fatalf("the page shows %d regions, the API %d", len(v.Shards), len(stats.Regions))
	}
	for i, r := range stats.Regions {
		if got := v.Shards[i]; got.Node != r.Node || got.Shards != len(r.Shards) {
			t.Fatalf("the page shows %+v for node %s, the API %d shards", got, r.Node, len(r.Shards))
		}
	}

	// The operator makes the member leave with the page's button; a wrong token first.
	row := fmt.Sprintf(`#members tr[data-node=%q]`, gone)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(row+` button[data-op="Leave"]`)),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token-at-all"),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
	); err != nil {
		t.Fatal(err)
	}
	pageWait[pageView](t, ctx, "the wrong token refused", pageWhen(`s.confirmError === "a valid bearer token is required"`), pageState)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("token").value = ""`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
	); err != nil {
		t.Fatal(err)
	}
	pageWait[pageView](t, ctx, "the leave accepted", pageWhen(`!s.dialogOpen && s.notice === "Leaving `+gone+`"`), pageState)
	awaitTerminated(t, leaver.System, "the member asked to leave")

	pageWait[pageView](t, ctx, "the member gone, without a reload", pageWhen(`
		s.load === "first" && s.members.length === 2 && s.members.every((m) => m.node !== `+strconv.Quote(gone)+`) &&
		s.events.some((e) => e.type === "member-left" && e.node === `+strconv.Quote(gone)+`) &&
		s.events.some((e) => e.type === "member-removed" && e.node === `+strconv.Quote(gone)+`)`), pageState)

	// Its shards were handed off and have a new home on the other nodes: the page
	// counts every shard there.
	pageWait[pageView](t, ctx, "every shard counted on the two nodes left", pageWhen(`
		s.load === "first" && s.shards.length === 2 && s.shards.every((r) => r.node !== `+strconv.Quote(gone)+`) &&
		s.shards.reduce((n, r) => n + r.shards, 0) === `+strconv.Itoa(shards)), pageState)

	saveScreenshot(t, ctx)
}

// TestClusterPageReadOnly opens the page of a server without writes, on a one-node
// cluster whose role is markup: no Leave or Down button, and the role shown as text.
func TestClusterPageReadOnly(t *testing.T) {
	ctx := newBrowser(t)
	reg := testRegistry(t)
	mc := multinode.Start(t, multinode.Options{Nodes: 1, Registry: reg, Configure: func(_ int, c *cluster.Config) {
		c.Roles = []string{markupRole}
	}})
	n := startServices(t, reg, mc.Node(0), management.Config{})
	awaitManagers(t, n.Node)
	if err := chromedp.Do(ctx, chromedp.Navigate(n.mgmt.URL()+"/")); err != nil {
		t.Fatal(err)
	}
	v := pageWait[pageView](t, ctx, "the member without buttons", pageWhen(`
		s.stream === "live" && s.members.length === 1 && s.members[0].status === "Up" && s.singletons.length === 2 &&
		document.querySelectorAll("#members button, .writes:not([hidden])").length === 0`), pageState)
	if v.Members[0].Roles != markupRole+" (oldest)" || v.Injected {
		t.Fatalf("the role shows as %q; rendered as markup: %v", v.Members[0].Roles, v.Injected)
	}
}

// saveScreenshot saves a screenshot of the page: to docs/images/cluster-page.png with
// TROUPE_UPDATE_SCREENSHOT=1 (for docs/operations.md), else in the test's temporary
// directory.
func saveScreenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cluster-page.png")
	if os.Getenv("TROUPE_UPDATE_SCREENSHOT") == "1" {
		path = filepath.Join("..", "docs", "images", "cluster-page.png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
