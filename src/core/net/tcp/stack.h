// The TCP stack over a netdev's rings: what the VMA face puts behind each
// offloaded TCP socket. Segments come from the rings' reader (UdpStack
// owns the rx queues and hands TCP over through SegmentInput), are checked
// (header, checksum) and go where the Table says: a connection, a
// listener (which owns its handshakes and not yet accepted connections),
// or a RST. Segments go out through the netdev's FrameTx, each behind the
// Ethernet and IP headers of its connection's path (route and next hop,
// resolved when it opens; its MSS from the path's MTU), or, where the
// rings copy anyway, through a packet socket, a burst's segments merged
// for GSO and sent as the call ends.
//
// Steering: a listener's (address, port) flow brings its handshakes and
// its connections; an active open steers its own local address and port.
// A flow is counted by its holders and removed with the last. A listener
// that stops while connections it gave out live leaves their flow
// bringing only them (FlowSteering::add_kept_only): the port's new
// connections go to the kernel's listener.
//
// Handles: listen(), connect() and accept() give a Socket, valid until
// close(); a closed connection finishes in the stack (FIN, TIME-WAIT) and
// is freed when done. Time is the stack's clock (microseconds, monotonic;
// a test's own clock may stand in): run_timers() fires what is due,
// next_due() says when to come back. There is no tick.
//
// Exports (SS_API): what libvma.so calls; the rest is for core's tests
// until a face calls it (tests/ext/abi.sh).
//
// Locking: one mutex over all of it. The rings' reader enqueues under its
// own lock (the inbox's lock is a leaf) and drains after it; no call here
// is made with this stack's lock held from outside.
#pragma once
#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "core/base/api.h"
#include "core/net/frame_tx.h"
#include "core/net/packet_tx.h"
#include "core/net/rx_segment.h"
#include "core/net/tcp/connection.h"
#include "core/net/tcp/handover.h"
#include "core/net/tcp/isn.h"
#include "core/net/tcp/listener.h"
#include "core/net/tcp/table.h"
#include "core/net/tcp/timer_queue.h"
#include "core/net/udp_tx.h"
#include "core/prov/steering.h"

namespace ss::net::tcp {

struct StackCounters {
  uint64_t segments_in = 0;
  uint64_t bad_header = 0, bad_checksum = 0;  // dropped
  uint64_t no_socket = 0;                     // for no connection or listener: RST answered
  uint64_t time_wait_reused = 0;              // a SYN took a TIME-WAIT connection's place
  uint64_t frames_out = 0;                    // segments sent in frames of the rings
  // Packets the packet socket (Config::packets) took, and the segments
  // of every batch handed to it (a refused packet's counted in tx_errors).
  uint64_t gso_packets = 0, gso_segments = 0;
  uint64_t no_frame = 0;   // a segment waited for a free frame
  uint64_t tx_errors = 0;  // a full tx ring or a failed kick: the segment is lost
  uint64_t path_lost = 0;  // an accepted handshake whose path is not the rings', or a segment with
                           // no route now: dropped
  uint64_t handed_over = 0, moved_drops = 0;  // connections handed over; their late segments
  uint64_t pass_failed = 0;                   // the steering's entry made, but not turned to pass
  // A stopped listener's flow left whole (the steering could not keep
  // only its connections: new connections to that port get RST), or a
  // connection on a kept-only flow not kept (the kernel resets it).
  uint64_t keep_failed = 0;
  uint64_t stray_syns = 0;  // SYNs read after their port went to the kernel: dropped, not reset
  uint64_t stray_to_kernel = 0;  // ACKs of no connection passed to the kernel (to_kernel_instead)
  // A connection the steering could not mark ours (FlowSteering::own): it
  // follows its port's group, and a change of the group loses it.
  uint64_t own_failed = 0;
};

class Socket;

class Stack final : public SegmentInput {
 public:
  struct Config {
    prov::FlowSteering* steering = nullptr;
    FrameTx* tx = nullptr;
    // Set: every segment leaves through this packet socket instead, a
    // burst's merged for GSO (gso_batch.h): where the rings copy anyway.
    PacketTx* packets = nullptr;
    // The longest frame the rings receive: the MSS announced leaves
    // room for headers in it (0: the path's MTU alone bounds it).
    size_t rx_frame_max = 0;
    TxResolver* resolver = nullptr;
    std::function<uint64_t()> clock;  // empty: CLOCK_MONOTONIC in microseconds
    // Called (under the stack's lock: it must only signal) when a call
    // armed a timer earlier than the deadline watch_due() was last told:
    // the face's service thread sleeps until that deadline.
    std::function<void()> on_earlier_due;
    // Called (under the stack's lock: it must only signal) when a watched
    // handle joins an empty ready list (watch_ready), on whichever thread
    // fed the stack: a poller asleep elsewhere learns of it.
    std::function<void()> on_first_ready;
  };
  // -EINVAL without steering, tx or resolver.
  SS_API static int create(const Config& cfg, std::unique_ptr<Stack>* out);
  SS_API ~Stack() override;

  // Listens on ip:port (ip all zero: every address of its family):
  // -EADDRINUSE (also while a stopped listener's connections keep the
  // port: its new connections are the kernel's), or the steering's -errno.
  SS_API int listen(const IpAddr& ip, uint16_t port, const ListenerConfig& cfg, Socket** out);
  // Opens t (local: a concrete address and port, the caller's to have
  // reserved) and sends the SYN: 0; 1 with *why when the rings cannot
  // carry the path (the caller uses the kernel); -EADDRINUSE for a tuple
  // in use, the route's or the steering's -errno. cfg.mss is lowered to
  // what the path's MTU allows.
  SS_API int connect(const FourTuple& t, const tcp::Config& cfg, Socket** out, ToKernel* why);
  // connect(2) again on a connection handle whose connection ended
  // (CLOSED: refused, reset, timed out), as Linux's socket allows: the
  // ended one goes (its tuple and flow), then with t a new connection and
  // its SYN, as connect() opens one: 0, 1 (*why: the path is not the
  // rings'), -errno; without t, or when it fails, the handle keeps no
  // connection (calls: -ENOTCONN). -EISCONN while the old one lives,
  // -EINVAL for a listener.
  SS_API int reconnect(Socket* s, const FourTuple* t, const tcp::Config& cfg, ToKernel* why);
  // Every open connection marked ours in the steering (FlowSteering::own),
  // before other processes share the rings' ports; later ones are marked
  // as they open. 0 or the first error.
  SS_API int own_open();
  // The oldest completed handshake of listener l: 0 and *out (and *peer),
  // -EAGAIN when none, -EINVAL when l is not a listener.
  SS_API int accept(Socket* l, Socket** out, FourTuple* peer);
  // As Connection's calls: bytes, or -errno (-EAGAIN: would block).
  SS_API ssize_t send(Socket* s, std::span<const uint8_t> data, bool keep_error = false);
  SS_API ssize_t recv(Socket* s, std::span<uint8_t> out, bool peek = false,
                      bool keep_error = false);
  // recv without a copy (Connection::lend): up to `most` views of the
  // frames the data came in, moved to *out; give_back returns their bytes
  // to the window once the program let them go.
  SS_API ssize_t recv_lent(Socket* s, size_t most, std::vector<mem::Buffer>* out,
                           bool keep_error = false);
  SS_API void give_back(Socket* s, size_t bytes);
  // A receive callback's look (Connection::next_offer, settle_offer), the
  // callback run between them without the stack's lock; stop_offering
  // when there is no callback any more.
  SS_API mem::Buffer next_offer(Socket* s);
  SS_API void settle_offer(Socket* s, ReceiveQueue::Offer o, size_t len);
  SS_API void stop_offering(Socket* s);
  SS_API int shutdown_write(Socket* s);
  // Gives the handle up: a listener goes (its handshakes and unaccepted
  // connections reset); a connection closes (FIN, or RST with unread data;
  // abort: RST now) and lives on in the stack until done, then on_freed
  // runs (under the stack's lock: the face lets go of the port's kernel
  // socket there).
  SS_API void close(Socket* s, bool abort = false, std::function<void()> on_freed = {});
  // Takes listener s off the rings while other threads may still be in
  // calls on it: its handshakes reset, its port no longer steered or
  // matched; the handle stays valid until close(). Its completed
  // connections are reset too, or with keep_completed stay on the rings
  // for accept (its events POLLIN until the last is taken): a listener a
  // fork child shares loses no client it had answered. Then accept
  // -EAGAIN, events 0.
  SS_API void stop_listening(Socket* s, bool keep_completed = false);
  // poll(2) events: POLLIN (data, end of stream, a connection to accept),
  // POLLOUT, POLLRDHUP, POLLHUP, POLLERR.
  SS_API short events(Socket* s);
  SS_API int take_error(Socket* s);  // SO_ERROR
  SS_API State state(Socket* s);
  // And with `info`, what TCP_INFO reports (a listener's: state kClosed),
  // from the same look.
  SS_API Counters connection_counters(Socket* s, Info* info = nullptr);
  SS_API ListenerCounters listener_counters(Socket* s);
  // The handle's addresses: a connection's 4-tuple, a listener's local
  // address and port.
  SS_API FourTuple tuple(Socket* s);
  // Connection::set_option; on a listener, Listener::set_option.
  SS_API void set_option(Socket* s, Option o, int64_t value);
  // Hands connection s to another TCP (the kernel's, TCP_REPAIR): install
  // gets its state (handover.h), segments that arrived included, and
  // returns 0 once the other TCP carries it, or -errno. Then the
  // connection leaves the stack without a FIN or RST, its flow is no
  // longer steered, and its segments still on the rings are dropped for a
  // while (counted) rather than reset; one in TIME-WAIT stays, the
  // program's no more, as after its close. The handle stays the program's
  // until close(): its calls give -ENOTCONN and events() POLLIN|POLLOUT,
  // so a sleeper looks again and finds it moved. -EOPNOTSUPP before
  // ESTABLISHED or once closed (Connection::handover); on any error the
  // connection goes on as before. To another of our stacks (to_kernel
  // false: a fork child's, which adopts it and steers its frames to its
  // own slot) nothing is passed to the kernel; a connection whose port
  // only it holds (an active open's) or in TIME-WAIT stays (-EOPNOTSUPP).
  SS_API int hand_over(Socket* s, const std::function<int(const Handover&)>& install,
                       bool to_kernel = true);
  // Carries on here a connection another stack handed over (hand_over; to
  // another process through encode_handover): Connection::restore on t,
  // its unread bytes copied into frames of the rings, its port's flow
  // steered and the connection marked ours (FlowSteering::own), so its
  // frames come here from now on. 0 and *out; 1 with *why when the rings
  // cannot carry the path (the caller keeps it elsewhere); -EADDRINUSE for
  // a tuple open here; -ENOBUFS when the frames run out; the steering's or
  // Connection::restore's -errno. Nothing stays of a failed one.
  SS_API int adopt(const FourTuple& t, const Handover& h, const tcp::Config& cfg, Socket** out,
                   ToKernel* why);

  // A sleep waiting for the handle's events: another thread's input or
  // timers change them, and wake the handle's waiters. join_waiters: the
  // calling thread's kick eventfd (kick.h; a waiter until leave_waiters),
  // or -errno.
  SS_API int join_waiters(Socket* s);
  SS_API void leave_waiters(Socket* s, bool woken);
  // A count that moves with every change of the handle's state (edge-
  // triggered epoll).
  SS_API uint64_t changes(Socket* s);

  // Received segments from the rings' reader, in ring order
  // (rx_segment.h): enqueue keeps one, drain takes them under the lock.
  void enqueue(RxSegment&& seg) override;
  void drain() override;
  // Fires the timers due now and frees the connections that are done.
  SS_API void run_timers();
  // When run_timers() has work next (the clock's microseconds), UINT64_MAX
  // when nothing is armed.
  SS_API uint64_t next_due() const;
  // The deadline a sleeper that runs the timers waits for (UINT64_MAX:
  // none): a timer armed earlier calls Config::on_earlier_due.
  SS_API void watch_due(uint64_t due_us);
  // Wakes the handle's waiters and moves its change count (the face
  // changed what the handle reports: shutdown(SHUT_RD)).
  SS_API void wake(Socket* s);
  // A poller of many handles (socketXtreme) asks which changed instead of
  // looking at each: a watched handle joins the ready list at each change
  // the stack makes (data, state, room, an accept queue), once until
  // take_ready hands out its tag. watch_ready lists it at once (it may
  // hold what came before); a null tag unwatches.
  SS_API void watch_ready(Socket* s, const void* tag);
  SS_API void take_ready(std::vector<const void*>* out);
  // Whether take_ready would hand out any (no lock: a spinning poller asks).
  SS_API bool any_ready() const;
  // Whether the window s advertises is under a segment (the peer waits on
  // what the program holds).
  SS_API bool receive_window_shut(Socket* s);
  // The program's exit, which takes the stack with it where Linux's TCP
  // would go on closing: close_at_exit closes every connection a handle
  // still holds as close() would (the handles stay valid for threads
  // still running); awaiting_peer counts the closed connections whose peer
  // has yet to acknowledge our FIN or send its own, and says whether they
  // moved since its last call (one ended or had data acknowledged: the
  // peer still takes what the program sent) and the longest of their
  // retransmission timeouts; reset_awaiting_peer resets those (the wait
  // for them ended).
  struct ExitWait {
    size_t closing = 0;
    bool moved = false;
    uint64_t longest_rto_us = 0;
  };
  SS_API void close_at_exit();
  SS_API ExitWait awaiting_peer();
  SS_API void reset_awaiting_peer();
  StackCounters counters() const;
  size_t connections() const;  // in the table, closing ones included
  uint64_t now() const { return clock_(); }

 private:
  class Host;
  class RingConnection;
  class Sending;
  struct Outlet;
  friend class PathSink;
  explicit Stack(const Config& cfg);
  // The path to t's peer: 0, 1 (*why: not the rings'), or -errno.
  int resolve(const FourTuple& t, TxPath* path, ToKernel* why);
  std::unique_ptr<Connection> make_connection_locked(const FourTuple& t, const tcp::Config& cfg);
  // A connection for t not open here, on its path: 0, 1 with *why, -errno.
  int new_connection_locked(const FourTuple& t, const tcp::Config& cfg, ToKernel* why,
                            std::unique_ptr<Connection>* out);
  // c on handle s: in the table, its flow steered, marked ours; 0 or -errno.
  int enter_locked(Socket* s, const FourTuple& t, std::unique_ptr<Connection> c);
  // Opens t on handle s (connect, reconnect): 0, 1 with *why, -errno.
  int open_locked(Socket* s, const FourTuple& t, const tcp::Config& cfg, ToKernel* why);
  int steer_locked(const prov::SteeredFlow& f);
  void unsteer_locked(const prov::SteeredFlow& f);
  void unlisten_locked(Socket* s);  // a listener's part of close and stop_listening, once
  int accept_locked(Socket* l, Socket** out);
  void close_locked(Socket* s, bool abort, std::function<void()> on_freed);
  // Flow f's frames from now on for its open connections only.
  void keep_only_open_locked(const prov::SteeredFlow& f);
  bool kept_only_locked(const FourTuple& t) const;  // t's flow is kept-only
  // Whether t's listener left the rings under kMovedQuietUs ago.
  bool left_lately_locked(const FourTuple& t, uint64_t now);
  void drain_inbox_locked();
  void segment_locked(RxSegment& seg, uint64_t now);
  // A segment of an open connection, its in-order ACK held for the batch.
  void input_held_locked(Connection* c, const Header& h, const Options& o, mem::Buffer payload,
                         uint64_t now);
  // A segment of a connection handed over lately: dropped, not reset.
  bool moved_locked(const FourTuple& t, uint64_t now);
  bool to_kernel_instead_locked(const FourTuple& t, const Header& h);  // ListenerHost's
  void send_stateless_locked(const FourTuple& t, const Header& h, const Options& o);
  // Frees the closed connections that may be done since the last sweep
  // (maybe_done_: out of the table, flows released) and moves listeners'
  // handshakes along. Never a walk over every connection: a stack holds
  // tens of thousands in TIME-WAIT.
  void sweep_locked();
  // The handle whose state the last call changed, woken at its end (a
  // closed connection's: listed for the sweep).
  void touch_locked(Connection* c);
  void wake_touched_locked();
  void mark_ready_locked(Socket* s);
  // After a program's call: a timer earlier than the watched deadline
  // calls on_earlier_due.
  void check_due_locked();
  // Connection* -> its entry.
  struct Open {
    FourTuple t;
    std::unique_ptr<Connection> conn;
    prov::SteeredFlow flow;          // the flow it holds
    bool kept = false;               // in the steering's kept connections
    Socket* handle = nullptr;        // the program's, until close()
    std::function<void()> on_freed;  // close()'s
  };
  // Takes the entry out: its flow released, on_freed run.
  void free_locked(std::map<Connection*, Open>::iterator it);
  // The entry's part of the steering (kept, flow) released.
  void unsteer_open_locked(Open& o);
  Open* open_of(Connection* c);

  Config cfg_;
  std::function<uint64_t()> clock_;
  mutable std::mutex mu_;
  std::unique_ptr<Host> host_;  // the listeners' ListenerHost
  IsnGenerator isn_;
  TimerQueue timers_;
  Table table_;
  std::map<Connection*, Open> opens_;                   // in the table
  std::map<Socket*, std::unique_ptr<Socket>> sockets_;  // the program's handles
  std::vector<Socket*> listeners_;                      // those of sockets_ that listen
  std::vector<Connection*> maybe_done_;                 // closed, changed since the last sweep
  // close_at_exit's, with snd_una at awaiting_peer's last look (pruned there).
  std::vector<std::pair<Connection*, uint32_t>> exit_waits_;
  std::map<prov::SteeredFlow, int> flow_refs_;
  std::vector<prov::SteeredFlow> kept_only_;  // of flow_refs_: add_kept_only's
  std::vector<Socket*> touched_;              // since the last wake
  std::vector<Socket*> ready_;                // watched, changed since take_ready
  std::atomic<bool> any_ready_{false};        // !ready_.empty(), read without mu_
  std::vector<Connection*> held_;             // holding an ACK for the batch being read
  // Connections handed over (hand_over) and until when their segments
  // left on the rings are dropped.
  std::vector<std::pair<FourTuple, uint64_t>> moved_;
  // Listeners' flows unsteered whole, and until when a SYN that was on
  // the rings before is dropped (left_lately_locked).
  std::vector<std::pair<prov::SteeredFlow, uint64_t>> left_;
  uint64_t watched_due_ = UINT64_MAX;
  std::mutex inbox_mu_;           // a leaf: taken under the reader's lock and under mu_
  std::vector<RxSegment> inbox_;  // inbox_mu_: enqueued, not drained yet
  StackCounters ctr_;
  std::unique_ptr<Outlet> out_;  // after ctr_: it counts there
};

// One sleep's place among socket s's waiters (Stack::join_waiters): left
// however the sleep ends, a cancellation's unwind too; `kicked` is what
// the sleep saw of the kick.
struct ScopedWaiter {
  ScopedWaiter(Stack& st, Socket* s) : stack(st), sock(s), kick(st.join_waiters(s)) {}
  ~ScopedWaiter() {
    if (kick >= 0) stack.leave_waiters(sock, kicked);
  }
  ScopedWaiter(const ScopedWaiter&) = delete;
  ScopedWaiter& operator=(const ScopedWaiter&) = delete;
  Stack& stack;
  Socket* const sock;
  const int kick;  // the thread's kick eventfd, or -errno (not joined)
  bool kicked = false;
};

}  // namespace ss::net::tcp
