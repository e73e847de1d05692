// Package tracewire encodes a W3C trace context in binary, as the transport's traced
// frames and sharding's deliveries carry it: the trace id (16 bytes), the parent span
// id (8 bytes), the trace flags (1 byte) and the tracestate header's value as an
// unsigned varint length and its bytes (usually empty).
package tracewire
