// Package actor is Troupe's actor runtime: systems, actors, refs, mailboxes,
// supervision, death watch, ask, timers, stash and coordinated shutdown.
//
// # Actors
//
// An actor implements one method, Receive(ctx Context), and handles ctx.Message() with
// a type switch. Lifecycle events arrive as messages: Started before anything else,
// Restarting on the failing instance before a restart, Stopping when a stop begins, and
// Stopped exactly once, last, after every child has stopped.
//
//	type counter struct{ n int }
//
//	func (c *counter) Receive(ctx actor.Context) {
//		switch ctx.Message().(type) {
//		case inc:
//			c.n++
//		case get:
//			ctx.Respond(c.n)
//		}
//	}
//
// Spawn actors from Props, which carry the producer of fresh instances and the mailbox,
// supervision and throughput settings. Names are unique among siblings; paths look like
// "/user/parent/child". Troupe's own actors live under "/system".
//
// # Scheduling
//
// An idle actor holds no goroutine. Its mailbox is a pair of lock-free queues (system
// messages first, then user messages) and an atomic flag. The sender that sets the flag
// hands the actor to the system's dispatcher: up to GOMAXPROCS worker goroutines that
// each run an actor for up to Throughput messages and then take the next one, if one
// waits. A monitor adds workers while queued actors make no progress, so an actor that
// blocks cannot starve the others. A blocking Ask that finds its recipient idle runs it
// on the asking goroutine for a few messages instead, since that goroutine would only
// wait. Tell of a pointer message does not allocate.
//
// # Failure
//
// A panic in Receive is recovered (with its stack, as a *supervision.PanicError),
// logged at error level with the actor's path and the stack, and suspends the actor;
// its parent's supervision.Strategy decides to resume it, restart it (a fresh instance
// from Props; the mailbox is kept, the failing message is not redelivered), stop it, or
// escalate. Nothing in this package panics on bad input: errors are returned, and
// undeliverable messages become DeadLetter events. A system configured without a
// logger writes warnings and errors to standard error; Config.Slog routes the logs to
// a log/slog handler instead.
//
// # What can be lost, and when
//
// Delivery between actors is at most once. A message is lost only as a dead letter,
// and every dead letter is published on the event stream (DeadLetter, with its Reason),
// counted (System.DeadLetterCount) and logged at warn level at a bounded rate, with a
// count of what was not logged:
//   - a message to an actor that has stopped (ErrRecipientStopped), and what was left
//     in its mailbox and stash when it stopped;
//   - a message a bounded mailbox dropped (ErrMailboxFull; with the Reject policy,
//     Tell returns the error instead);
//   - a reply without a sender to go to (Respond returns ErrNoRecipient);
//   - a reply that reaches an Ask after it completed (ErrLateReply);
//   - a message a transport could not send (its own reasons; the send returns them).
//
// # Asking, watching, timing
//
// Blocking calls take a context.Context first. Ref.Ask returns a Future; the generic
// Ask[T] waits for a typed reply. An Ask fails at its context's deadline with an error
// naming the target and the message's type (ErrTimeout), and at once with ErrDeadLetter
// when its request becomes a dead letter. Context.Watch delivers Terminated when a
// watched actor stops. Keyed timers, a receive timeout, a bounded stash and stacked
// behaviors are on Context, which is composed of small role interfaces (MessageContext,
// SenderContext, TimerContext, ...) that helpers can accept alone.
//
// # Metrics
//
// Config.MeterProvider (an OpenTelemetry metric.MeterProvider) turns on the metrics
// of the runtime and of every extension started on the system; without it they cost
// a nil check. The runtime reports live, spawned and stopped actors, restarts,
// failures, dead letters by reason, and a sampled histogram of mailbox depths (taken
// when an actor yields its goroutine with messages still waiting, at most every
// 10ms). Props.MetricsKind opts a kind of actor into histograms of the time each
// message waited in the mailbox and the time Receive took, and a gauge of the
// messages waiting, under the attribute kind. Extensions take the provider from
// System.MeterProvider. docs/operations.md lists every instrument.
//
// # Traces
//
// Config.TracerProvider (an OpenTelemetry trace.TracerProvider) turns tracing on. A
// message carries the W3C trace context it was sent in: ctx.Send, ctx.Respond and
// ctx.Forward in an actor handling a traced message, Ref.SendContext and TellContext
// with a context.Context, Ask from a context with a span (a client span, troupe.ask
// followed by the message type). The actors whose Props set Trace handle each message
// in a span, troupe.receive followed by the message type, the child of the span that
// sent it; the others pass the context on, so a trace stays whole through them.
// ctx.TraceContext returns the current message's context for Ask and other calls.
// Transports carry the context to other systems. Without a provider nothing is added
// to messages and nothing is allocated.
//
// # Extension point: transports
//
// One part of this package is not for applications: Transport, RemoteProcess,
// InstallTransport and TransportHost connect a System to a transport that reaches
// actors in other systems (package remote is one). Refs to such actors behave as local
// ones.
//
// # Extension point: layers
//
// A layer that carries users' messages through actors of its own (sharding through
// its regions and shards, persistence from its journal) keeps what users see the same
// as if the messages had gone straight to their actors: its messages implement
// MessageWrapper, MessageBatch, MessageCarrier or UntracedMessage, so that dead
// letters, failed asks and spans name the users' messages; Ref.AskDeferred queues an
// ask under the layer's own lock and leaves running an idle recipient to the caller,
// Future.Await waits for an ask as the blocking Ask does, and System.PublishDeadLetter
// publishes what the layer could not deliver as the runtime's own dead letters.
//
// # Shutdown
//
// System.Shutdown runs coordinated shutdown: named phases in order, each with tasks
// registered by the layers above and a timeout, then stops user actors, system actors
// and the guardians. System.ShutdownOnSignal runs it when the process gets SIGTERM or
// an interrupt.
package actor
