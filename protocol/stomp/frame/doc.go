// Package frame is Sluice's server-side codec for STOMP 1.0, 1.1 and 1.2
// frames. It sits below the STOMP server: the server reads bytes from a
// connection, hands them to a [Parser] (or lets a [Reader] do so), acts on the
// [Frame] values that come out, and encodes its replies with [AppendFrame] or a
// [Writer]. The package knows nothing of sessions, destinations or the broker
// engine; it only turns bytes into frames and frames into bytes, and offers the
// two pure negotiation helpers a server needs when a client connects:
// [NegotiateVersion] and [NegotiateHeartBeat].
//
// # Reading
//
// [Parser] is a resumable state machine. Feed it any slice of bytes; it
// consumes as much as it needs to complete one frame or one heart-beat and
// says how many bytes it took, so a server can feed it whole socket reads and
// a test can feed it one byte at a time and see the same frames. It stops after
// each frame so that the caller can change the protocol version (after
// CONNECT) before the next frame is decoded. Memory use is bounded by
// [Limits]: an endless header line, a huge content-length or a body without
// its NUL is refused with an [*Error] as soon as it crosses a limit, before the
// parser allocates for it.
//
// [Reader] wraps an [io.Reader] (a net.Conn) with a read buffer and a
// [Parser].
//
// Header decoding depends on the version the parser is told with SetVersion:
// STOMP 1.0 has no escapes; 1.1 decodes \\, \n and \c; 1.2 adds \r. Any
// other backslash sequence is an error in 1.1 and 1.2. CONNECT, STOMP and
// CONNECTED frames are never unescaped, since they are exchanged before (or
// while) the version is agreed. Lines may end in LF or CR LF in every version,
// because the version is unknown when the CONNECT frame arrives.
//
// # Writing
//
// [AppendFrame] appends one encoded frame to a byte slice; [Writer] batches
// frames and heart-beats in a buffer and writes them to the connection on
// Flush, so a server can send many frames with one system call. Header names
// and values are escaped for the version, except in CONNECT, STOMP and
// CONNECTED frames; a header that cannot be represented in the version (a
// line feed in a STOMP 1.0 value, say) is refused rather than written.
//
// # Errors
//
// Every decoding failure is an [*Error] whose Reason is a short sentence a
// server can put in the message header of an ERROR frame, and whose Kind can
// be tested with errors.Is, for example errors.Is(err, ErrLineTooLong). The
// package never panics on input bytes.
package frame
