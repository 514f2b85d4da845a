// librsocket's private hooks for librspreload (src/preload): an rsocket
// built around a kernel TCP socket the program already holds, so the
// program's descriptor number IS the rsocket. Exported under the private
// node SLIPSTREAM_RSPRELOAD_PRIVATE (librsocket.map); nothing else may
// call them. Each returns 0 (or a value), or -1 and errno.
#pragma once

#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

// Makes the kernel stream socket `fd` (AF_INET/AF_INET6, not yet connected
// or listening) an rsocket at the same number, keeping its O_NONBLOCK and
// FD_CLOEXEC as the program set them. The rsocket connects and listens
// only over providers that never use the kernel socket's own stream
// unasked (shm's rendezvous, verbs' rdma_cm, tcp's side channel), so the
// stream stays free for plain TCP.
int ss_rspreload_adopt(int fd, int domain);

// Undoes ss_rspreload_adopt after an rconnect that failed, at once or
// after EINPROGRESS (the fd table's kRsocketFallback: the kernel socket
// connects to the peer by itself then): `fd` is a plain kernel socket
// again (O_NONBLOCK and FD_CLOEXEC as the rsocket had them), not closed.
int ss_rspreload_release(int fd);

// The program's bind of a UDP socket to `addr` failed with EADDRINUSE:
// when a listener's side channel (the tcp provider's, docs/architecture.md
// "librspreload") holds that port number, it gives the port up. 1 when it
// did (bind again), else 0.
int ss_rspreload_yield_udp_port(const struct sockaddr* addr, unsigned len);

// Whether rsocket `fd` (any of its numbers: a duplicate made while it
// connected keeps kind kRsocket) is one whose connect moved to kernel TCP
// after EINPROGRESS: 1 or 0.
int ss_rspreload_fell_back(int fd);

// Whether rsocket `fd`'s connection failed (reset, a failed set-up) with
// nothing left to read, its transport looked at now: 1 or 0.
int ss_rspreload_failed(int fd);

// The provider name ("shm", "verbs", "tcp") of fd's connection; nullptr
// when fd is no rsocket or has no connection yet.
const char* ss_rspreload_provider(int fd);

// The kernel TCP socket that answers rsocket fd's options for librspreload
// (options.cc): fd itself when it is one (a connecting side; tcp's
// accepted transport), else one made for the connection at the first ask
// (shm's accepted side, whose descriptor is its unix stream), given the
// options the rsocket took from its listener; fd when none can be made
// (out of descriptors, locked in), -1 and EBADF for no rsocket.
int ss_rspreload_options_fd(int fd);

// Whether TCP `port` is one the settings leave to the kernel (the
// "kernel_ports" list): 1 or 0.
int ss_rspreload_kernel_port(unsigned port);

// ioctl's FIONREAD/SIOCINQ (`in` 1) or SIOCOUTQ (`in` 0) of rsocket fd:
// the byte count, or -1 and errno (EBADF: no rsocket; EINVAL: a listener).
int ss_rspreload_queued(int fd, int in);

// Whether upstream's preload_config rules (in the rsocket configuration
// directory) give this program's socket(domain, type, protocol) to the
// preload: 1 or 0. No file, or no valid rule in it: 1.
int ss_rspreload_takes(int domain, int type, int protocol);

// rpoll's timing for the preload's epoll_wait: the busy phase
// (polling_time, microseconds) and the longest sleep (wake_up_interval,
// ms; <= 0: none). Also starts a fork child's services again, as rpoll.
void ss_rspreload_poll_timing(long long* spin_us, int* wake_interval_ms);

// The preload's count of the program's signal handlers on the calling
// thread (`ran`) and whether one that ran since *seen must end a blocking
// call with EINTR (`interrupted`, moving *seen on): given when the
// program installs a handler, asked by blocking calls between their
// sleeps (librsocket/signal_probe.h).
void ss_rspreload_signal_probe(uint64_t (*ran)(void),
                               int (*interrupted)(uint64_t* seen, int restartable));

// The numbers librsocket holds for the preload (its close of an rsocket
// waits for another thread's send or receive): in a fork child's handler,
// librsocket closes by the system call the number of a connection the
// program closed before the fork (the thread that would finish that close
// is the parent's) and calls `closed` with it, so that the preload no
// longer counts it held.
void ss_rspreload_fork_closed(void (*closed)(int fd));

// exec with rsockets left open (librspreload's exec_hook.cc). Before
// it: rsocket fd's connection as the state a new image of this process
// builds it back from, *own the descriptor the rsocket was made at,
// *domain its family (set whatever the answer), and
// in keep[*nkeep] (in: its room) the descriptors the exec must leave
// open for it; the rsocket locked until the image goes or
// ss_rspreload_exec_abandon(fd) (the exec failed): the state's length,
// *state valid until then; or -1 and errno, unlocked: EOPNOTSUPP, it
// cannot cross (not established and quiet, a provider that cannot
// follow: reset it there); EBUSY, it must stay out of the new image
// (it stayed locked 200 ms: an exec from a signal handler inside a call).
// A shm connection first moves to its stream alone, both ends (rsocket(7),
// "Exec"): it waits up to 2 s for the peer's answer.
long ss_rspreload_exec_save(int fd, const void** state, int* own, int* domain, int* keep,
                            int* nkeep);
void ss_rspreload_exec_abandon(int fd);
// In a fork child, before ss_rspreload_exec_save: 1 when rsocket fd's
// connection stays with another process that holds it (this one never
// moved it, the other did not let go by `until_ms`, on CLOCK_MONOTONIC):
// it does not cross, and this process no longer counts as a holder until
// ss_rspreload_exec_unaside(fd) (the exec failed). 0: it may cross.
int ss_rspreload_exec_aside(int fd, long long until_ms);
void ss_rspreload_exec_unaside(int fd);
// In a vfork child, after ss_rspreload_exec_save(fd): the connection goes
// to the new program; the parent's copy (the same memory) fails from now
// on with ECONNRESET, and its close leaves the transport alone; the
// rsocket is unlocked. ss_rspreload_exec_take_back(fd): the exec failed.
void ss_rspreload_exec_give_away(int fd);
void ss_rspreload_exec_take_back(int fd);
// The descriptors rsocket fd's connection runs on (its own, its stream):
// how many were put in out[room].
int ss_rspreload_transports(int fd, int* out, int room);
// In the new image, before the program runs: the rsocket built back at
// `fd` (the saved *own, left open by the exec) from such a state; or, for
// a connection that could not cross, a reset one there named `name`
// (ECONNRESET once, then an end of stream and EPIPE), a copy whose close
// leaves the transport alone when `aside` (another process goes on with
// it). 0, or -1 and errno. A connection another process passed
// (SCM_RIGHTS) is built back the same way at the number it arrived at,
// the n descriptors its state names at from[i] now at to[i] (n 0 for an
// exec, which keeps every number).
int ss_rspreload_exec_restore(int fd, int domain, const void* state, unsigned long len,
                              const int* from, const int* to, int n);
int ss_rspreload_exec_lost(int fd, int domain, const struct sockaddr* name, unsigned len,
                           int aside);
// A listening rsocket `listener` left open across exec: its connections
// queued for raccept leave the queue, each an rsocket at its own number
// (in fds[], at most `room`; the rest stay queued and end at the exec),
// to be carried as connections; none is answered after, until the image
// goes or ss_rspreload_exec_unhold(listener) (the exec failed) queues
// them again first. The count, or -1 and errno (EBUSY: serving stayed
// busy 200 ms). In the new image, ss_rspreload_requeue(listener, fd)
// queues carried connection `fd` for raccept on the listener made there.
int ss_rspreload_exec_hold(int listener, int* fds, int room);
void ss_rspreload_exec_unhold(int listener);
int ss_rspreload_requeue(int listener, int fd);

// The preload's settings (component "preload", listed by
// slipstream-config): the value of row `id`.
enum ss_rspreload_setting_id {
  SS_RSPRELOAD_ENABLED,       // SLIPSTREAM_PRELOAD: 0 leaves every socket to the kernel
  SS_RSPRELOAD_SQ_SIZE,       // RS_SQ_SIZE: RDMA_SQSIZE of each new rsocket (0: rsocket's default)
  SS_RSPRELOAD_RQ_SIZE,       // RS_RQ_SIZE
  SS_RSPRELOAD_INLINE,        // RS_INLINE
  SS_RSPRELOAD_STATS_DIR,     // SLIPSTREAM_PRELOAD_STATS (a string)
  SS_RSPRELOAD_KERNEL_PORTS,  // SLIPSTREAM_PRELOAD_KERNEL_PORTS (a string)
  SS_RSPRELOAD_SETTING_COUNT
};
long long ss_rspreload_setting(int id);
// A string row into buf[cap]; its length, or -1 and errno.
long ss_rspreload_setting_str(int id, char* buf, unsigned long cap);

#ifdef __cplusplus
}
#endif
