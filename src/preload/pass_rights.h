// A connection passed to another process in a message (SCM_RIGHTS): the
// kernel passes only the descriptor, so the sender's preload adds what
// the receiver's needs to go on with the rsocket: a sealed memfd with its
// state (librsocket's exec hand-over, carried_record.h) and the
// descriptors its transport runs on, in a control message of their own
// after the program's. The receiver's preload takes them out of what it
// received, builds the rsocket back at the number the program got, and
// hands the program its own descriptors only. The sender's copy is given
// away (ECONNRESET; its close leaves the transport to the receiver), as
// a vfork child's exec takes a connection from its parent.
#pragma once
#include <sys/socket.h>
#include <sys/types.h>

namespace ss::preload {

// sendmsg on a descriptor that is not an rsocket: true when the message
// passes rsocket connections to a preloaded process and was sent here
// with their states (*sent: the send's answer, -1 and errno included);
// false when there is nothing to carry (the caller sends it as it is).
// Connections that cannot go (not quiet, a receiver without librspreload,
// a sandbox) are named in a warning and passed as the kernel descriptor
// alone; a listener goes as its kernel listener, its open file as
// blocking as the program left it.
bool send_carrying(int fd, const msghdr* msg, int flags, ssize_t* sent);

// sendmmsg on a descriptor that is not an rsocket: whether a message of
// the batch passes an rsocket or a listener (then each goes by sendmsg,
// as the kernel's sendmmsg sends them one by one).
bool batch_passes_rsockets(const mmsghdr* v, unsigned int vlen);

// recvmsg on a descriptor that is not an rsocket: true when it was
// received here (a unix socket and room for descriptors in the control
// bytes), *got its answer: the rsockets a sender's preload carried are
// built back and the program gets its own descriptors only, with the
// kernel's truncation of its control bytes (MSG_CTRUNC). False: the
// caller receives it as it is.
bool recv_carried(int fd, msghdr* msg, int flags, ssize_t* got);

// recvmmsg on a descriptor that is not an rsocket: whether it is a unix
// socket and a message of the batch has room for a descriptor (then each
// is received by recvmsg, so that recv_carried sees it).
bool batch_may_carry(int fd, const mmsghdr* v, unsigned int vlen);

}  // namespace ss::preload
