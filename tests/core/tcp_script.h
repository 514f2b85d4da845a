// The TCP conformance scripts' runner: one Connection against a scripted
// peer on a fake wire, under a virtual clock (no sleeping, no sockets).
// A script is lines of text; '#' starts a comment.
//
//   set NAME VALUE        settings before the connection opens:
//                         mss rcvbuf sndbuf ws ts sack nodelay cork
//                         keepalive (0/1), iss, cc (reno|cubic|none), min_rto delack
//                         msl keepidle keepintvl user_timeout (ms), keepcnt
//                         syn_retries retries, ts_offset, slack (ms: how far
//                         an expected segment may be from its time)
//   TIME < SEGMENT        the peer sends SEGMENT at TIME
//   TIME > SEGMENT        the stack must have sent SEGMENT at TIME
//   TIME CALL [= RESULT]  the program calls (RESULT: a number or an errno
//                         name; default: the call's byte count, or 0)
//
// TIME: seconds (0.040), or +seconds after the previous line. The clock
// runs to TIME first, firing the stack's timers when they fall due; any
// segment the stack sent and no '>' line claimed fails the script.
//
// SEGMENT: FLAGS SEQ[:END] [ack N] [win N] [<OPTIONS>]
//   FLAGS: S F R P U E C, '.' for ACK (e.g. "S.", ".", "F.", "R");
//   SEQ:END carries END-SEQ bytes of data. Sequence numbers are absolute;
//   our ISS is `set iss` (default 0); the peer's is its first SYN's.
//   Data bytes follow a pattern of their stream offset, so what the
//   program reads and what the stack sends is checked byte for byte.
//   OPTIONS, comma-separated: mss N, ws N, sackOK, ts VAL ECR,
//   sack L:R L:R..., nop, eol, raw HEX... (inbound: written in that order,
//   padded; outbound: compared as parsed, order aside; "<>": none).
//   For '>' lines, win and OPTIONS are checked only when given.
//
// CALLs: connect, listen (the first inbound SYN opens the connection
//   passively), send N, recv N [peek], shutdown, close, abort, quickack,
//   hold and release (a batch the stack reads: Connection::hold_acks),
//   nodelay 0|1, option NAME VALUE (setsockopt on the open connection:
//   nodelay cork quickack keepalive keepcnt rcvbuf sndbuf as given,
//   keepidle keepintvl user_timeout in ms); checks: state NAME (RFC 9293's: ESTABLISHED, ...),
//   error NAME|0 (SO_ERROR, taken), readable 0|1, writable 0|1,
//   counter NAME N (a Counters field), rto MS (the current timeout),
//   snd_wnd N (the peer's window, scaled), mss N (data per segment),
//   cwnd N (the congestion window, in segments).
#pragma once
#include <cstddef>
#include <string>

namespace ss::net::tcp::script {

// Runs a script; "" when it passed, else what failed, with its line.
// frame_bytes > 0: the peer's data arrives spread over linked frames of
// at most that many bytes each (as off a multi-buffer ring), which must
// change nothing the script sees.
std::string run(const std::string& text, size_t frame_bytes = 0);

}  // namespace ss::net::tcp::script
