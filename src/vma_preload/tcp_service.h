// The vma-tcp service thread: it reads the rings of every netdev whose
// TCP stack has had a connection or a listener, and fires their timers,
// while the program makes no call that would (ring_turn.h says when it
// leaves the rings to the program).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ss::vma::preload {

struct NetdevRings;
class TcpOffload;

// r's TCP stack has a connection or a listener: the vma-tcp thread reads
// its rings and fires its timers from now on.
void tcp_serve_netdev(NetdevRings* r);
// The netdevs tcp_serve_netdev was given.
std::vector<NetdevRings*> tcp_netdevs();
// The process whose rings serve TCP (tcp_serve_netdev's caller), 0 before
// any: a child made without fork's handlers (a raw clone) is not it.
pid_t tcp_serving_pid();
// In a fork child's handler: no netdev served yet (the parent's rings
// are not this process's; a listener joining them adds its own).
void tcp_service_fork_child();
// A connection closed while calls may still be in it, whose record
// stays (a fork child's, SocketRecord::close_child_tcp): freed by the
// vma-tcp thread once none waits in it and a second passed.
void tcp_retire(std::unique_ptr<TcpOffload> t);
// Wakes the vma-tcp thread (a stack's on_earlier_due: a timer earlier
// than its sleep was armed). Only signals: called under a stack's lock.
void tcp_wake_service();
// A sleep's bound from a stack's next timer: its milliseconds from now
// (rounded up, 0 when due), -1 when none is armed (UINT64_MAX).
inline int ms_until(uint64_t due_us, uint64_t now_us) {
  if (due_us == UINT64_MAX) return -1;
  return due_us <= now_us ? 0 : static_cast<int>((due_us - now_us + 999) / 1000);
}

}  // namespace ss::vma::preload
