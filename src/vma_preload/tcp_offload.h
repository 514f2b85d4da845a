// A TCP connection the VMA preload has on the rings (unless
// SLIPSTREAM_VMA_TCP=0): opened by connect() of a socket decided
// "vma" to a peer routed out of a netdev with rings, or accepted by a
// listener of the rings (tcp_listen.h). The connection is that netdev's
// TCP stack's (core/net/tcp/stack.h); a connect's kernel socket (the
// program's descriptor) stays bound to its address and port, unconnected,
// so no other socket of the host takes them. The program's calls on the
// descriptor come here: data, shutdown, its names, SO_ERROR, TCP_INFO,
// TCP_NODELAY, poll, select and epoll. Same-host peers, other routes and
// a next hop the kernel could not resolve in time (open) stay with the
// kernel's connect.
//
// Progress: each call reads the rings and fires the timers due; while the
// program does not call, a service thread ("vma-tcp") does, so ACKs,
// retransmissions and the peer's data move on. A blocking receive spins
// VMA_RX_POLL looks, then sleeps on the netdev's rings, the connection's
// kick and its next timer.
//
// A fork child cannot use the parent's rings: an inherited connection is
// handed to the kernel socket the program's descriptor names (tcp_repair.h)
// at the child's first use while the parent holds it; one the parent
// closed first waits for the child to take it onto rings of its own
// (tcp_park.h), and goes to the kernel socket if none does. Where the
// kernel cannot take it, the child's calls fail as on a dead connection
// (ENOTCONN, EPIPE).
#pragma once
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/pollable.h"
#include "core/net/tcp/stack.h"
#include "libvmacompat/stats_publisher.h"
#include "libvmacompat/xtreme_buffs.h"
#include "vma_preload/tcp_info_linux.h"
#include "vma_preload/tcp_options.h"
#include "vma_preload/tcp_service.h"

namespace ss::vma::preload {

struct NetdevRings;
struct RxExtras;

// Whether the process's exit closed the connections (tcp_exit.cc).
bool tcp_exiting();

class TcpOffload {
 public:
  // Opens fd's connection to `to` on the rings and sends the SYN: 0 and
  // *out; 1 when the rings do not serve this peer (the caller connects the
  // kernel socket); -errno as connect(2) gives it. A next hop being
  // resolved is waited for a while (longer when blocking).
  static int open(int fd, int family, const sockaddr* to, socklen_t len, bool nonblocking,
                  std::unique_ptr<TcpOffload>* out);
  // A connection a listener of r's stack accepted (tcp_listen.h), for a
  // socket of `family`.
  static std::unique_ptr<TcpOffload> adopt(NetdevRings* r, net::tcp::Socket* s, int family) {
    return std::unique_ptr<TcpOffload>(new TcpOffload(r, s, family, /*active=*/false));
  }
  // close(): FIN after what is queued (RST with unread data, or after
  // linger's {1, 0}); the stack finishes the connection, and lets the port
  // go when it is done.
  ~TcpOffload();
  // close(2) of the last descriptor, before it goes, under fd's SO_LINGER
  // (Linux's semantics): {1, 0} makes the close reset the connection;
  // otherwise the FIN goes now after what is queued, and {1, T} waits up
  // to T seconds for the peer to acknowledge it all, blocking or not
  // (with unread data the close resets at once instead, and nothing waits).
  void begin_close(int fd);
  // close(2) of fd, before the descriptor goes: a connect's port stays
  // taken until the stack frees the connection, on a duplicate made now
  // (port_holds.h; while open, the program's descriptor is the
  // connection's only one, as a kernel socket's).
  void keep_port(int fd);
  TcpOffload(const TcpOffload&) = delete;
  TcpOffload& operator=(const TcpOffload&) = delete;

  // connect(2)'s answer once open() sent the SYN (again: to a later
  // connect on the socket): a blocking socket waits for the handshake (0,
  // or its errno: ECONNREFUSED, ETIMEDOUT, EINTR); a non-blocking one gets
  // EINPROGRESS (again: EALREADY while it lasts); again once it ended: its
  // outcome once, after a connect that returned early, then EISCONN; after
  // a failed attempt was reported, a new connection to `to` (Linux's
  // socket is unconnected again): 1 when the rings do not serve it (the
  // caller connects the kernel socket, the connection here stays ended).
  // `to`: a later connect's address (for the new connection).
  int connect_result(int fd, bool nonblocking, bool again, const sockaddr* to = nullptr,
                     socklen_t len = 0);
  // recvmsg/sendmsg as the kernel answers them on a TCP socket (flags:
  // MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL, MSG_NOSIGNAL; SO_RCVTIMEO,
  // SO_SNDTIMEO; SIGPIPE on a closed connection); -1 and errno.
  ssize_t recvmsg(int fd, msghdr* m, int flags);
  // recvfrom_zcopy's receive (the same waits and answers as recvmsg's):
  // up to `most` views of the frames the data came in, moved to *out,
  // their bytes out of the window until give_back(); 0 at the end.
  ssize_t recv_lent(int fd, int flags, size_t most, std::vector<mem::Buffer>* out);
  void give_back(size_t bytes);
  // The receive callback (register_recv_callback) on each in-order view it
  // has not seen, in turn, outside the stack's lock (it may call us):
  // VMA_PACKET_RECV keeps the view for the reads, DROP frees it (the
  // window reopens), HOLD lends it until free_packets. Until it looked,
  // the reads do not see a byte. Run by the program's receives, polls and
  // waits; once the callback is unregistered, every byte is readable.
  void run_callback();
  ssize_t sendmsg(int fd, const msghdr* m, int flags);
  int shutdown(int how);  // 0 or -errno
  // getsockname (peer false) or getpeername: the address's length, or
  // -ENOTCONN for a peer not connected (yet, or any more).
  int name(bool peer, sockaddr_storage* out);
  int take_error();  // SO_ERROR
  // TCP_INFO from the connection's state: glibc's fields, and past them
  // the counts of segments and bytes each way, the least RTT, the
  // windows, D-SACKs, out-of-order segments and RTOs (pacing, delivery
  // rate, busy times and ECN: 0).
  void info(LinuxTcpInfo* out);
  void set_option(net::tcp::Option o, int64_t value);  // setsockopt (Connection::set_option)
  // Gives the connection to fd's kernel socket for good (tcp_repair.h): 0,
  // or -errno and it goes on here. Then moved(): calls under way end with
  // -1 (ENOTCONN) and their callers make them again on the kernel socket.
  int hand_to_kernel(int fd);
  // Gives the connection to another process's stack (a fork child's):
  // its state as encode_handover's bytes in *out (Stack::hand_over to a
  // stack). 0, or -errno and it goes on here; then moved().
  int hand_to_stack(std::vector<uint8_t>* out);
  bool moved() const { return moved_.load(std::memory_order_acquire); }
  bool in_calls() const { return waiting_.load(std::memory_order_acquire) > 0; }  // asleep in one
  // A listener's (its port the listener's too): another process's stack
  // may carry it on (hand_to_stack); a connect's may not.
  bool accepted() const { return !active_; }
  // A connection another process handed over (hand_to_stack, t and h its
  // decoded bytes), carried on by r's stack for fd: 0 and *out, or -errno
  // (nothing stays here).
  static int take(NetdevRings* r, int fd, int family, const net::tcp::FourTuple& t,
                  const net::tcp::Handover& h, std::unique_ptr<TcpOffload>* out);

  // SocketRecord's Pollable (poll, select, epoll). readiness(events,
  // false) right after changes() takes nothing new off the rings, which
  // the count would not cover (a second edge, spurious).
  short readiness(short events, bool poll_rings = true);
  WaitTarget wait_target(short events, int* sleep_ms);
  void after_wait(const WaitTarget& armed, bool kicked);
  uint64_t changes();
  // The socket's record's parts (they outlive this object): its vmastat
  // block, to which each call adds what the connection did since the last
  // one (segments in and out as packets, data bytes, retransmissions); its
  // descriptor and Extra API state (the receive callback, held packets).
  // Under VMA_SOCKETXTREME=1 the connection joins its rings'
  // socketXtreme members (socketxtreme.h); xtreme_watch once the record
  // shows this connection.
  void attach(const stats::SocketStats* s, int fd, RxExtras* extras);
  void xtreme_watch();

  // socketXtreme (socketxtreme.cc). xtreme_take: the bytes the program
  // freed of its lent buffers back to the window, then the views kept
  // back by the last poll and up to `most` more (never waiting);
  // xtreme_keep: views the poll could not lend, first at the next take.
  // xtreme_events: POLLOUT, POLLRDHUP, POLLHUP and POLLERR now;
  // xtreme_edges: those of `now` that rose since the last call (POLLOUT
  // also when a send found no room since).
  // lent_owner: what the buffers lent for this connection owe back (made
  // at first use).
  void xtreme_take(size_t most, std::vector<mem::Buffer>* out);
  void xtreme_keep(std::vector<mem::Buffer> views);
  short xtreme_events();
  short xtreme_edges(short now);
  LentOwner* lent_owner();
  // While the peer waits on a window the program's held buffers shut,
  // the next free wakes a program asleep on the ring (a poll gives the
  // bytes back); one freed already kicks it now.
  void wake_at_free_if_shut();
  LentOwner* lent_owner_if_made() const { return lent_owner_.load(std::memory_order_acquire); }
  NetdevRings* rings() const { return rings_; }
  net::tcp::FourTuple tuple() const;

 private:
  void publish();
  struct PublishAtEnd {  // a data call's counters published whatever way it returns
    TcpOffload* t;
    ~PublishAtEnd() { t->publish(); }
  };
  // active: connect's (connecting; its port is the kernel socket's);
  // else accepted (connected).
  TcpOffload(NetdevRings* r, net::tcp::Socket* s, int family, bool active)
      : rings_(r),
        sock_(s),
        family_(family),
        active_(active),
        phase_(active ? Phase::kConnecting : Phase::kConnected) {}
  // A new connection on the handle after a failed one (connect_result).
  int reopen(int fd, const sockaddr* to, socklen_t len, bool nonblocking);
  // One look at the rings and the timers due.
  void progress();
  // A receive found nothing queued: 0 once there may be something (look
  // again), or -errno: -EAGAIN for a non-blocking one after a look at the
  // rings, or the wait's (SO_RCVTIMEO's -EAGAIN, -EINTR).
  int await_readable(int fd, int flags);
  // Until one of `events` (or an error or hang-up): 0; -EAGAIN when
  // timeout_ms (>= 0) passed, -EINTR for a handler the kernel would not
  // restart the call after. `quiet`: the caller holds none of the
  // library's locks (a send or receive), so its sleeps are quiet
  // (core/base/signal_depth.h).
  int wait_for(short events, int timeout_ms, bool restartable, bool quiet);
  // The same until ready() holds, spinning `polls` looks first (-1: for
  // good) before it sleeps.
  template <class Ready>
  int wait_until(const Ready& ready, int64_t polls, int timeout_ms, bool restartable, bool quiet);
  // SO_LINGER's wait in close: until the FIN is acknowledged or ms passed.
  void linger_wait(int ms);

  NetdevRings* const rings_;
  net::tcp::Socket* const sock_;
  const int family_;
  const bool active_;
  // The duplicate that holds a connect's port once the program closed its
  // descriptor (keep_port; -1 before, and for an accepted one: the
  // listener holds its port), released when the stack frees the
  // connection, TIME-WAIT included: the kernel gives the port to nobody
  // else meanwhile.
  int hold_fd_ = -1;
  std::atomic<bool> read_shut_{false};       // shutdown(SHUT_RD): receives give 0
  std::atomic<bool> abort_at_close_{false};  // SO_LINGER {1, 0}
  // Threads inside wait_until (a blocked send or recv): Linux's close
  // leaves their connection open until they return.
  std::atomic<int> waiting_{0};
  std::atomic<bool> moved_{false};  // hand_to_kernel
  // Where connect(2) left the socket, as Linux's socket state: connecting
  // (open's SYN, until a connect call sees the attempt end), connected (a
  // later connect: EISCONN), unconnected (the attempt failed and a call
  // said so: the next connect opens a new connection).
  enum class Phase : uint8_t { kConnecting, kConnected, kUnconnected };
  std::atomic<Phase> phase_;
  const stats::SocketStats* stats_ = nullptr;
  int fd_ = -1;
  RxExtras* extras_ = nullptr;
  std::atomic<bool> offering_{false};  // run_callback began offering
  bool xtreme_ = false;                // joined the socketXtreme members
  std::mutex xtreme_mu_;
  std::vector<mem::Buffer> xtreme_kept_;  // xtreme_mu_
  std::atomic<LentOwner*> lent_owner_{nullptr};
  std::atomic<short> xtreme_seen_{0};  // the events xtreme_edges reported
  std::mutex published_mu_;
  net::tcp::Counters published_;  // published_mu_: what publish() added so far
};

}  // namespace ss::vma::preload
