// Package protocol is kbroker's pure Kafka wire codec: request framing with
// bounded sizes, request header parsing (v0–v2, flexible versions with
// tagged fields), and response framing. It does no I/O beyond reading from
// the io.Reader it is given, touches no storage, and never panics on input:
// every length read from the wire is bounded by the bytes present.
//
// Request and response bodies are franz-go's kmsg types.
package protocol
