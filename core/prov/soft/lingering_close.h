// Closing a TCP socket that still has unread bytes sends a reset, and a
// reset makes the peer's kernel drop data we sent that it has not read
// yet. So a connection is closed the way careful TCP servers do it: write
// side shut, incoming bytes drained until the peer's FIN (or a bound),
// then close - on a small thread that exists only while such sockets wait.
#pragma once

namespace ss::prov::soft {

// Takes ownership of `fd`, a connected stream socket whose write side may
// still be open.
void lingering_close(int fd);

}  // namespace ss::prov::soft
