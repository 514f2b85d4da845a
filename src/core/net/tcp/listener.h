// A listening socket's queues (RFC 9293's LISTEN): a SYN makes a
// connection in SYN-RECEIVED on the SYN queue (bounded, Linux's
// tcp_max_syn_backlog); its completed handshake moves it to the accept
// queue (bounded by listen()'s backlog), from which accept() takes the
// oldest. A SYN that finds the SYN queue full is answered with a SYN
// cookie (syn_cookie.h: no state kept; its ACK makes the connection), as
// Linux's tcp_syncookies 1; one that finds the accept queue full, or a
// handshake's last ACK that does, is dropped and counted (the peer sends
// it again, as Linux's peers do). An ACK for no connection and no good
// cookie is answered with a RST (RFC 9293 §3.10.7.2).
//
// The stack looks a segment's 4-tuple up in its connection table first
// and hands the listener what is left for its port; the listener owns the
// connections on both queues, and feeds them, until accept() hands one
// out. Not
// thread-safe: the stack's lock guards it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/isn.h"
#include "core/net/tcp/syn_cookie.h"

namespace ss::net::tcp {

struct ListenerConfig {
  Config conn;               // each accepted connection's settings
  size_t backlog = 128;      // the accept queue: listen()'s, capped by somaxconn
  size_t syn_backlog = 256;  // the SYN queue (tcp_max_syn_backlog)
  int syncookies = 1;  // Linux's tcp_syncookies: 0 never, 1 when the SYN queue is full, 2 always
  uint32_t max_syn_rate = 0;  // new SYNs taken a second (libvma's VMA_TCP_MAX_SYN_RATE); 0: any
};

struct ListenerCounters {
  uint64_t syns = 0, handshakes = 0;
  uint64_t syn_queue_overflows = 0;     // SYNs dropped: the SYN queue full
  uint64_t syn_rate_drops = 0;          // SYNs dropped: over max_syn_rate
  uint64_t accept_queue_overflows = 0;  // SYNs or last ACKs dropped: the accept queue full
  uint64_t failed_handshakes = 0;       // reset, or the SYN-ACK's retries ran out
  uint64_t resets_sent = 0;             // ACKs for no connection
  uint64_t cookies_sent = 0, cookies_ok = 0, cookies_bad = 0;
};

// What a listener needs of its stack.
class ListenerHost {
 public:
  virtual ~ListenerHost() = default;
  // A closed connection whose segments go to t's peer.
  virtual std::unique_ptr<Connection> make_connection(const FourTuple& t, const Config& cfg) = 0;
  // Sends a segment of no connection to t's peer: a RST reset_reply()
  // made, or a SYN cookie's SYN-ACK with its options.
  virtual void send_stateless(const FourTuple& t, const Header& h, const Options& o) = 0;
  // A segment of no connection, before it is answered with a RST: true
  // when its 4-tuple went to the kernel instead (an ACK: see
  // Stack::to_kernel_instead_locked) and the segment is dropped.
  virtual bool to_kernel_instead(const FourTuple&, const Header&) { return false; }
  // A connection make_connection gave that the listener drops before any
  // accept (a handshake that failed, the listener's close).
  virtual void forget(const FourTuple&) {}
};

// The RST answering a segment no connection takes (RFC 9293 §3.10.7.1):
// <SEQ=SEG.ACK><CTL=RST> when it carried an ACK, else
// <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>. False for a RST (never
// answered).
bool reset_reply(const Header& h, uint32_t data_len, Header* rst);

class Listener {
 public:
  Listener(const ListenerConfig& cfg, ListenerHost* host, const IsnGenerator* isn)
      : cfg_(cfg), host_(host), isn_(isn) {}
  // A segment for the listening port that no connection of the stack took.
  void input(const FourTuple& t, const Header& h, const Options& o, mem::Buffer data,
             uint64_t now_us);
  // After a timer of a connection on the SYN queue fired: moves it on or
  // forgets it.
  void settle();
  // The listening socket closes: every connection it holds (handshakes,
  // established and not accepted) is reset, as Linux does.
  void abort_all(uint64_t now_us);
  // The oldest connection whose handshake completed (nullptr: none, the
  // caller's EAGAIN); *t gets its tuple.
  std::unique_ptr<Connection> accept(FourTuple* t);
  // setsockopt on the listening socket: the handshakes from now take it.
  void set_option(Option o, int64_t value) { tcp::set_option(&cfg_.conn, o, value); }
  size_t syn_queue() const { return syn_queue_.size(); }
  size_t accept_queue() const { return accept_queue_.size(); }
  const ListenerCounters& counters() const { return ctr_; }

 private:
  struct Entry {
    FourTuple t;
    std::unique_ptr<Connection> conn;
  };
  Entry* pending(const FourTuple& t);
  void send_cookie(const FourTuple& t, const Header& syn, const Options& o, uint64_t now);
  // An ACK with a good cookie: true when it made a connection (or was
  // dropped for want of room); false: answer with a RST.
  bool cookie_ack(const FourTuple& t, const Header& h, const Options& o, mem::Buffer& data,
                  uint64_t now);

  ListenerConfig cfg_;
  ListenerHost* host_;
  const IsnGenerator* isn_;
  SynCookies cookies_;
  std::vector<Entry> syn_queue_;       // in SYN-RECEIVED
  std::deque<Entry> accept_queue_;     // established, oldest first
  uint64_t rate_second_ = UINT64_MAX;  // the second (of now) whose SYNs rate_syns_ counts
  uint32_t rate_syns_ = 0;
  ListenerCounters ctr_;
};

}  // namespace ss::net::tcp
