// Command troupe looks inside a running Troupe cluster, and acts on it, through the
// management HTTP API of one of its nodes (package management): its members, shards
// and singletons as tables, its events as they happen, and leave and down for
// operators. It also removes sharding's internal data from a stopped cluster's
// journal. Install it with
//
//	go install ./cmd/troupe   # in a clone of the repository
//
// # Usage
//
//	troupe [flags] COMMAND [flags] [ARGS]
//
// Commands:
//
//	members                  the members of the cluster, as the node asked sees them
//	member ADDR              one member
//	leave ADDR               make a member leave gracefully (hands its shards and
//	                         singletons over, leaves, stops its system); needs -token
//	down ADDR                down a member at once; needs -token
//	shards                   the entity types started on the node asked
//	shards TYPE              the type's shards and entities on every node
//	                         (-detail: one row per shard; -local: the node asked only)
//	singletons               where each singleton runs
//	events                   follow the cluster's events until interrupted
//	                         (-type member-up,member-removed,... keeps only those)
//	remove-sharding-data -dir DIR [-shards N] TYPE...
//	remove-sharding-data -postgres CONNSTRING [-schema S] [-shards N] TYPE...
//	                         remove sharding's internal data of the entity types
//	                         from the badger journal in DIR, or the PostgreSQL
//	                         journal; stop every node first
//	help                     print the usage
//
// ADDR is a member's address, troupe://system@host:port, or system@host:port, or
// host:port (then the node asked finds the member at it).
//
// Global flags, before or after the command:
//
//	-url URL        the management server (default http://127.0.0.1:8558, or
//	                $TROUPE_MANAGEMENT_URL)
//	-token TOKEN    the bearer token of leave and down (default
//	                $TROUPE_MANAGEMENT_TOKEN)
//	-json           print the server's JSON as it came (events: one object a line),
//	                for scripts
//	-timeout D      how long to wait for an answer (default 15s); for events, for
//	                the stream to open; not for remove-sharding-data
//	-cacert FILE    trust the certificate authorities in FILE (PEM) for https
//	-cert FILE, -key FILE
//	                a client certificate and its key, for mutual TLS
//	-insecure       do not verify the server's certificate (tests only)
//
// Tables are for people; their layout may change. Scripts use -json, whose fields are
// the management API's (see docs/operations.md).
//
// # Exit codes
//
//	0    done (events: interrupted)
//	1    the server answered an error (a 5xx, a 409), or the command failed
//	2    usage: an unknown command or flag, a missing argument, a bad -url
//	3    the management server cannot be reached (refused, timed out, TLS failed)
//	4    not authorized: 401 (the token is missing or wrong) or 403 (the node
//	     has writes disabled: management.Config.EnableWrites)
//	5    not found: 404 (no such member, or entity type on that node)
//	130  interrupted
//
// Every failure is one line on standard error, starting with "troupe: ".
package main
