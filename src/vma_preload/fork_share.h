// A fork child receiving on an inherited offloaded socket. The parent's
// rings hold the socket's port (the steering program sends its frames to
// them, and a child never touches the parent's rings), so a child's copy
// used to get only same-host datagrams while the parent kept the socket.
// The child's first call on such a socket (a data call, a poll, an
// epoll_ctl adding it; not close) asks the parent, through a page both
// map (made at the parent's first offload, before any fork that matters)
// and a datagram to the parent's abstract unix socket named there, to
// lend the port's flows to the kernel (UdpEndpoint::lend_to_kernel): the
// kernel socket then receives for both processes, as a kernel socket
// shared by fork does. The parent's service thread (vma-netlink) answers
// at once and takes the flows back once every process that asked has
// exited (each second: /proc/PID/stat, a zombie or a reused pid counting
// as gone); the child waits for the answer a second at most (a stopped
// parent answers late; a parent that exited or exec'd holds no name, and
// is not waited for).
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>

namespace ss::vma::preload {

// Parent: the page and the socket, made once. 0, or -errno (then no
// child can ask: one warning).
int fork_share_open();
// A fork child that takes the rings over (fork_child.cc): a page and a
// socket of its own, its children's owner from now on. 0 or -errno.
int fork_share_take_over();
// In the fork prepare handler: this process's pid, for the child (this
// process may exit before the child's handler asks for its parent).
void fork_share_prepare();
// In a fork child's handler: closes its copy of the parent's socket.
void fork_share_fork_child();
// Child: whether its parent owned the page and is gone (its descriptors,
// the rings' among them, closed), waiting a while, once, for one that is
// exiting or, in a daemon (a session leader), that will.
bool fork_share_parent_gone();
// Whether this process answers its children: it made the page, or took
// the rings over (fork_share_take_over).
bool fork_share_owner_here();
// Parent: the socket the service thread polls, or -1 (none yet, or the
// program closed it: the requests are then found each second).
int fork_share_fd();
// Parent, on the service thread: answers the requests, and takes back the
// flows whose askers have all exited. Nothing in a fork child (its
// service thread serves the rings it joined, not its parent's askers).
void fork_share_serve();
// Child: the name of the parent's request socket (fork_join.h asks
// there); false when the parent had no page.
bool fork_share_owner(sockaddr_un* name, socklen_t* len);
// Child: asks the parent to lend the flows of its socket record `id`
// (SocketRecord::id), and waits for the answer (bounded).
void fork_share_ask(uint64_t id);

}  // namespace ss::vma::preload
