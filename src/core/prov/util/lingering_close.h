// Closing a TCP socket that still has unread bytes makes the kernel send a
// reset and throw away what it has not transmitted yet - the tail of our
// stream, if the peer was slow to read. So the write side is shut first
// and the socket is closed only once the peer's kernel has acknowledged
// everything (or a bound expires), draining incoming bytes meanwhile.
#pragma once

namespace ss::prov::util {

// Takes ownership of `fd`, a connected stream socket, and closes it.
void lingering_close(int fd);

}  // namespace ss::prov::util
