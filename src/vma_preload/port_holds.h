// The duplicates that keep closed connections' ports taken while the
// stack finishes them (FIN, TIME-WAIT): made at the program's close of a
// connect's descriptor (TcpOffload::keep_port), closed when the stack
// frees the connection. A fork child closes its copies (its fork
// handler), so a port is never held for a child's life.
#pragma once

namespace ss::vma::preload {

// A close-on-exec duplicate of fd, above select(2)'s range where the
// limit allows (the program's own numbers stay low): its number, or -1
// and errno.
int hold_port(int fd);
// Closes a hold_port() duplicate.
void release_port(int hold);
// In a fork child's handler: closes the child's copies of every hold.
// Takes no lock.
void close_port_holds_in_fork_child();

}  // namespace ss::vma::preload
