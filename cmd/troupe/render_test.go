package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/management"
)

// The renderers on fixed answers of the management API (those of docs/operations.md).

const membersJSON = `{
  "selfNode": "troupe://shop@10.0.0.6:2552",
  "members": [
    {"node": "troupe://shop@10.0.0.5:2552", "nodeUid": "4811320905385513010", "status": "Up",
     "roles": ["web"], "upNumber": 1795937041300, "ageOrder": 1},
    {"node": "troupe://shop@10.0.0.6:2552", "nodeUid": "8192647260813964881", "status": "Up",
     "roles": [], "upNumber": 1795937041498, "ageOrder": 2},
    {"node": "troupe://shop@10.0.0.7:2552", "nodeUid": "11301708145239552537", "status": "Joining",
     "roles": ["web", "batch"], "upNumber": 0, "ageOrder": 0}
  ],
  "unreachable": [
    {"node": "troupe://shop@10.0.0.7:2552", "observedBy": ["troupe://shop@10.0.0.5:2552", "troupe://shop@10.0.0.6:2552"]}
  ],
  "oldest": "troupe://shop@10.0.0.5:2552",
  "oldestPerRole": {"web": "troupe://shop@10.0.0.5:2552", "batch": ""}
}`

// rendered decodes body into T and renders it.
func rendered[T any](t *testing.T, body string, render func(io.Writer, T) error) string {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := render(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// lines joins lines with a newline after each.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func checkRendered(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n--- got\n%s--- want\n%s", what, got, want)
	}
}

func TestRenderMembers(t *testing.T) {
	checkRendered(t, "members", rendered(t, membersJSON, renderMembers), lines(
		"NODE                         STATUS   AGE  ROLES      REACHABLE  NOTE",
		"troupe://shop@10.0.0.5:2552  Up       1    web        yes        oldest",
		"troupe://shop@10.0.0.6:2552  Up       2    -          yes        answered",
		"troupe://shop@10.0.0.7:2552  Joining  -    web,batch  no         ",
		"unreachable: troupe://shop@10.0.0.7:2552, as seen by troupe://shop@10.0.0.5:2552, troupe://shop@10.0.0.6:2552",
		"oldest with role batch: -",
		"oldest with role web: troupe://shop@10.0.0.5:2552",
	))
	checkRendered(t, "no members", rendered(t, `{"selfNode":"x","members":[],"unreachable":[],"oldest":"","oldestPerRole":{}}`, renderMembers),
		lines("NODE  STATUS  AGE  ROLES  REACHABLE  NOTE"))
}

func TestRenderMember(t *testing.T) {
	checkRendered(t, "member", rendered(t, `{"node": "troupe://shop@10.0.0.6:2552", "nodeUid": "8192647260813964881", "status": "Up",
     "roles": [], "upNumber": 1795937041498, "ageOrder": 2, "appVersion": "1.4.0"}`, renderMember), lines(
		"node:         troupe://shop@10.0.0.6:2552",
		"uid:          8192647260813964881",
		"status:       Up",
		"roles:        -",
		"age order:    2",
		"up number:    1795937041498",
		"app version:  1.4.0",
	))
	checkRendered(t, "message", rendered(t, `{"message": "Downing troupe://shop@10.0.0.6:2552"}`, renderMessage),
		lines("Downing troupe://shop@10.0.0.6:2552"))
}

func TestRenderShards(t *testing.T) {
	checkRendered(t, "entity types", rendered(t,
		`{"selfNode": "troupe://shop@10.0.0.5:2552", "entityTypes": [{"name": "Cart", "proxy": true}, {"name": "Counter", "proxy": false}]}`,
		renderEntityTypes), lines(
		"ENTITY TYPE  REGION",
		"Cart         proxy",
		"Counter      region",
	))
	checkRendered(t, "no entity types", rendered(t, `{"selfNode": "troupe://shop@10.0.0.5:2552", "entityTypes": []}`, renderEntityTypes),
		lines("no entity type is started on troupe://shop@10.0.0.5:2552"))

	const stats = `{
  "typeName": "Counter",
  "regions": [
    {"node": "troupe://shop@10.0.0.5:2552", "shards": [{"shardId": "3", "entityCount": 12}, {"shardId": "7", "entityCount": 4}], "failed": []},
    {"node": "troupe://shop@10.0.0.6:2552", "shards": [{"shardId": "1", "entityCount": 9}], "failed": ["4"]},
    {"node": "troupe://shop@10.0.0.8:2552", "shards": [], "failed": []}
  ],
  "failed": ["troupe://shop@10.0.0.7:2552"]
}`
	checkRendered(t, "stats", rendered(t, stats, func(w io.Writer, v management.ClusterShardsView) error {
		return renderShardStats(w, v, false)
	}), lines(
		"NODE                         SHARDS  ENTITIES",
		"troupe://shop@10.0.0.5:2552  2       16",
		"troupe://shop@10.0.0.6:2552  1       9",
		"troupe://shop@10.0.0.8:2552  0       0",
		"total                        3       25",
		"shards of troupe://shop@10.0.0.6:2552 that did not answer in time: 4",
		"nodes that did not answer in time: troupe://shop@10.0.0.7:2552",
	))
	checkRendered(t, "stats in detail", rendered(t, stats, func(w io.Writer, v management.ClusterShardsView) error {
		return renderShardStats(w, v, true)
	}), lines(
		"NODE                         SHARD  ENTITIES",
		"troupe://shop@10.0.0.5:2552  3      12",
		"troupe://shop@10.0.0.5:2552  7      4",
		"troupe://shop@10.0.0.6:2552  1      9",
		"shards of troupe://shop@10.0.0.6:2552 that did not answer in time: 4",
		"nodes that did not answer in time: troupe://shop@10.0.0.7:2552",
	))
	checkRendered(t, "region", rendered(t, `{
  "selfNode": "troupe://shop@10.0.0.5:2552",
  "typeName": "Counter",
  "shards": [{"shardId": "3", "entityCount": 12}, {"shardId": "7", "entityCount": 4}],
  "failed": ["9"]
}`, renderRegion), lines(
		"SHARD  ENTITIES",
		"3      12",
		"7      4",
		"total  16",
		"shards that did not answer in time: 9",
	))
}

func TestRenderSingletons(t *testing.T) {
	checkRendered(t, "singletons", rendered(t, `{
  "selfNode": "troupe://shop@10.0.0.6:2552",
  "singletons": [
    {"name": "CounterCoordinator", "node": "troupe://shop@10.0.0.5:2552", "runningHere": false, "state": "Younger", "stopped": false},
    {"name": "boss", "node": "", "runningHere": false, "state": "End", "stopped": true}
  ]
}`, renderSingletons), lines(
		"SINGLETON           NODE                         MANAGER STATE",
		"CounterCoordinator  troupe://shop@10.0.0.5:2552  Younger",
		"boss                -                            End (stopped)",
	))
	checkRendered(t, "no singletons", rendered(t, `{"selfNode": "", "singletons": []}`, renderSingletons),
		lines("no singleton has a manager on -"))
}

func TestRenderEvents(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"type":"member-removed","time":"2026-11-29T07:24:02.545Z","member":{"node":"troupe://shop@10.0.0.7:2552","nodeUid":"11301708145239552537","status":"Removed","roles":[],"upNumber":1795937041515,"ageOrder":0},"previousStatus":"Exiting"}`,
			"2026-11-29T07:24:02.545Z  member-removed  troupe://shop@10.0.0.7:2552 Removed (was Exiting)"},
		{`{"type":"member-up","time":"2026-11-29T08:24:02.5+01:00","member":{"node":"troupe://shop@10.0.0.7:2552","nodeUid":"1","status":"Up","roles":[],"upNumber":1,"ageOrder":0}}`,
			"2026-11-29T07:24:02.500Z  member-up  troupe://shop@10.0.0.7:2552 Up"},
		{`{"type":"oldest-changed","time":"2026-11-29T07:24:02Z","oldest":"troupe://shop@10.0.0.5:2552"}`,
			"2026-11-29T07:24:02.000Z  oldest-changed  oldest troupe://shop@10.0.0.5:2552"},
		{`{"type":"oldest-changed","time":"2026-11-29T07:24:02Z","role":"web"}`,
			"2026-11-29T07:24:02.000Z  oldest-changed  oldest with role web: -"},
		{`{"type":"shard-allocated","time":"2026-11-29T07:24:02Z","shard":{"typeName":"Counter","shard":"3","to":"troupe://shop@10.0.0.6:2552","durationMs":12.4}}`,
			"2026-11-29T07:24:02.000Z  shard-allocated  Counter shard 3 to troupe://shop@10.0.0.6:2552 in 12ms"},
		{`{"type":"shard-handoff-started","time":"2026-11-29T07:24:02Z","shard":{"typeName":"Counter","shard":"3","from":"troupe://shop@10.0.0.6:2552","rebalance":true}}`,
			"2026-11-29T07:24:02.000Z  shard-handoff-started  Counter shard 3 from troupe://shop@10.0.0.6:2552 (rebalance)"},
		{`{"type":"singleton-changed","time":"2026-11-29T07:24:02Z","singleton":{"name":"boss","node":"troupe://shop@10.0.0.6:2552","runningHere":true,"state":"Oldest","stopped":false}}`,
			"2026-11-29T07:24:02.000Z  singleton-changed  boss runs on troupe://shop@10.0.0.6:2552 (manager Oldest)"},
		{`{"type":"singleton-changed","time":"2026-11-29T07:24:02Z","singleton":{"name":"boss","node":"","runningHere":false,"state":"End","stopped":true}}`,
			"2026-11-29T07:24:02.000Z  singleton-changed  boss manager stopped (manager End)"},
		{`{"type":"something-new","time":"2026-11-29T07:24:02Z"}`,
			"2026-11-29T07:24:02.000Z  something-new  "},
	} {
		checkRendered(t, tc.data, rendered(t, tc.data, renderEvent), tc.want+"\n")
	}
}
