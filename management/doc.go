// Package management is the management HTTP API of a Troupe node, modelled on Akka
// Management's routes: health checks for load balancers and Kubernetes probes, this
// node's view of the cluster's members, shards and singletons, a stream of the
// cluster's events, leave and down for operators, and a place for a metrics
// exporter. Every answer is JSON (the event stream is server-sent events).
//
// # Starting it
//
// Start it once per actor system, after remote, cluster, sharding and the singletons
// it should report on; Get finds it again:
//
//	m, err := management.Start(sys, management.Config{}) // 127.0.0.1:8558
//
// It stops when the system shuts down, in the before-actor-system-terminate phase of
// coordinated shutdown, after the member has left the cluster (so probes see it
// leave); Stop stops it earlier.
//
// # Routes
//
//   - GET /alive: 200 while the actor system runs.
//   - GET /ready: 200 when this member is Up, every entity type's region or proxy
//     started here has reached its coordinator (a region: is registered with it),
//     and every singleton manager here has started; otherwise 503 with the reasons.
//     A region that was ready once stays ready while its coordinator moves.
//   - GET /cluster/members: this node's address, every member (address, uid, status,
//     roles, age), the unreachable members with the members that observe them, and
//     the oldest member overall and per role.
//   - GET /cluster/members/{address}: one member; 404 for an unknown one, 400 for a
//     malformed address. The address is troupe://system@host:port, URL-encoded, or
//     system@host:port.
//   - PUT /cluster/members/{address} with operation=Leave or operation=Down (a form,
//     or the JSON {"operation":"Leave"}); DELETE /cluster/members/{address} leaves.
//     A member leaves by running its coordinated shutdown (hand-off of its shards and
//     singletons, leave, end of its system); another member than the one asked is
//     asked through its management server, which must be started.
//   - GET /cluster/shards: the entity types started here; GET
//     /cluster/shards/{type}: this node's shards of the type and their entity
//     counts; GET /cluster/shards/{type}/stats: the same for every node.
//   - GET /cluster/singletons: where each singleton with a manager here runs.
//   - GET /cluster/events: server-sent events of the cluster's member and
//     reachability changes (a downing shows as member-downed), sharding's rebalance
//     events (on the node where the type's coordinator runs) and singleton moves, as
//     Event values named by the Event* constants; ?type=a,b keeps only those types.
//   - GET /metrics: Config.Metrics, when set (a Prometheus exporter's handler).
//   - GET /config: whether the routes that change the cluster are enabled, and the
//     event types (ConfigView); never the token.
//   - GET / and GET /page/{file}: the live cluster page, for people.
//
// # The live cluster page
//
// A browser pointed at the server's URL gets a page (HTML, CSS and plain JavaScript
// embedded in the binary; no build step, nothing fetched from elsewhere) that shows
// the members (status, roles, reachability, the oldest marked), the shards of each
// entity type per node as bars, where each singleton runs, and a running log of the
// event stream. It redraws what an event says changed, and everything every 10
// seconds, without a reload. With EnableWrites it shows Leave and Down buttons and
// asks for the token in a dialog when one is pressed; the token stays in the page's
// memory and is sent as a bearer token. The page reads the same routes as any client
// and renders what they answer as text only; it is served with a
// Content-Security-Policy that allows its own files and routes and nothing else.
//
// # Safe by default
//
// The server listens on 127.0.0.1 unless Config.Address says otherwise. The routes
// that change the cluster answer 403 unless Config.EnableWrites is set, and then
// need "Authorization: Bearer <Config.Token>" (401 otherwise), compared in constant
// time. Config.TLS makes it HTTPS. Requests have read, write and idle timeouts and a
// body limit (413 beyond it); event streams are bounded in number (503 beyond
// Config.MaxEventStreams).
//
// # What can be lost, and when
//
//   - Events to a slow client: each event stream has a buffer (Config.EventBuffer);
//     when an event finds it full, or the client does not take an event within the
//     WriteTimeout, the event is dropped, the stream closed, and both are counted
//     (Stats) and logged. Nothing else waits for a client. A client reconnects and
//     reads the current state from the other routes.
//   - Events before a stream opened are not replayed.
//   - Sharding's rebalance events appear only on the stream of the node where the
//     entity type's coordinator runs (the oldest member with the type's role).
//   - Singleton moves are reported for the singletons with a manager on this node.
package management
