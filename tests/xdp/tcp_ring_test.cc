// core/net/tcp's Stack on the xdp provider's rings over veth, against
// Linux's TCP in the other namespace: our end in a (its frames through
// AF_XDP: the steering program's redirect counter moves by at least the
// segments we took, a's kernel holds no TCP socket), Linux's sockets in b.
// Both directions of open (our connect to a Linux listener, a Linux
// connect to our listener), IPv4 and IPv6, data both ways checked byte by
// byte, orderly close, the flows gone with the last connection; 3% of
// the segments each way dropped at random (nft in b) and repaired. Needs
// root: without it the binary exits 77 (skipped) and says why.
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <linux/bpf.h>  // XDP_PACKET_HEADROOM
#include <net/if.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/net/packet_tx.h"
#include "core/net/tcp/handover_codec.h"
#include "core/net/tcp/stack.h"
#include "core/prov/xdp/xdp_join.h"
#include "core/prov/xdp/xdp_queue.h"
#include "tests/common/child_reaper.h"
#include "tests/xdp/ring_rig.h"

namespace {

using ss::net::IpAddr;
using ss::net::ToKernel;
using ss::net::tcp::FourTuple;
using ss::net::tcp::Handover;
using ss::net::tcp::ListenerConfig;
using ss::net::tcp::Socket;
using ss::net::tcp::Stack;
using ss::net::tcp::State;
using sstest::NetnsPair;

constexpr uint16_t kLinuxPort = 7000, kOurPort = 7001, kOurClientPort = 40000;

// n bytes that tell their offsets apart.
std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>((i * 131 + i / 4093 + seed) & 0xff);
  return s;
}

// A Linux client's half of an echo on its connected socket fd: msg
// written on a thread of its own, then a half-close, while everything
// echoed is read until the end of stream; fd closed. What came back.
// read(2) on Linux's end, again after a signal: a socket read with
// SO_RCVTIMEO set is not restarted (signal(7)).
ssize_t linux_read(int fd, void* buf, size_t len) {
  ssize_t n;
  do n = read(fd, buf, len);
  while (n < 0 && errno == EINTR);
  return n;
}

std::string echo_through(int fd, const std::string& msg) {
  std::thread writer([&] {
    size_t off = 0;
    while (off < msg.size()) {
      const ssize_t n = write(fd, msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    shutdown(fd, SHUT_WR);
  });
  std::string echoed;
  char buf[65536];
  ssize_t n;
  while ((n = linux_read(fd, buf, sizeof buf)) > 0) echoed.append(buf, static_cast<size_t>(n));
  writer.join();
  close(fd);
  return echoed;
}

class TcpRing : public sstest::RingRig {
 protected:
  void SetUp() override { start("sstcp", 1024); }
  ss::net::SegmentInput* make_tcp() override {
    Stack::Config c;
    c.steering = steering_.get();
    c.tx = frames_.get();
    c.resolver = resolver_.get();
    c.on_first_ready = [this] { first_ready_++; };
    if (gso()) {
      EXPECT_EQ(
          ss::net::PacketTx::open(static_cast<int>(if_nametoindex(NetnsPair::kIfA)), &packets_), 0);
      c.packets = packets_.get();
      if (!multi_buffer())  // the rig's frames bound the MSS, as libvma.so's
        c.rx_frame_max = 2048 - XDP_PACKET_HEADROOM;
    }
    EXPECT_EQ(Stack::create(c, &tcp_), 0);
    return tcp_.get();
  }
  void drop_tcp() override {
    tcp_.reset();
    packets_.reset();
  }
  // Segments leave through a packet socket, merged for GSO (TcpRingGso).
  virtual bool gso() const { return false; }
  // A fork child on this process's queues in a slot of its own
  // (xdp_join.h): the device's and each queue's share, an AF_XDP socket
  // per queue and a packet socket made here (the child may not make
  // them), then child(ds, qs, packet_fd, up) in the child, its result the
  // exit status; the child says its slot (or -errno) on `up`. The child's
  // pid in *reap, its slot in *slot; the device in *dev.
  using JoinedChild =
      std::function<int(const ss::prov::xdp::DeviceShare&,
                        const std::vector<ss::prov::xdp::QueueShare>&, int packet_fd, int up)>;
  void fork_joined(const JoinedChild& child, sstest::ChildReaper* reap, int32_t* slot,
                   std::shared_ptr<ss::prov::xdp::Device>* dev) {
    namespace xdp = ss::prov::xdp;
    *dev = xdp::Device::find(NetnsPair::kIfA);
    ASSERT_TRUE(*dev);
    xdp::DeviceShare ds;
    ASSERT_EQ((*dev)->share(&ds), 0);
    std::vector<xdp::QueueShare> qs(queues_.size());
    for (size_t q = 0; q < queues_.size(); q++) {
      auto* xq = dynamic_cast<xdp::XdpQueue*>(queues_[q].queue.get());
      ASSERT_TRUE(xq);
      ASSERT_EQ(xq->share(&qs[q]), 0);
      qs[q].own = xdp::JoinedQueue::open_socket();
      ASSERT_GE(qs[q].own, 0) << strerror(-qs[q].own);
    }
    std::unique_ptr<ss::net::PacketTx> packets;
    ASSERT_EQ(ss::net::PacketTx::open(static_cast<int>(if_nametoindex(NetnsPair::kIfA)), &packets),
              0);
    int up[2];
    ASSERT_EQ(pipe2(up, O_CLOEXEC), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(up[0]);
      _exit(child(ds, qs, packets->fd(), up[1]));
    }
    reap->pid = pid;
    close(up[1]);
    for (const xdp::QueueShare& q : qs) close(q.own);
    packets.reset();
    *slot = 0;
    EXPECT_EQ(read(up[0], slot, sizeof *slot), static_cast<ssize_t>(sizeof *slot));
    close(up[0]);
  }
  // The rings take a packet over several frames (XDP_USE_SG).
  bool multi_buffer() const { return queues_.front().queue->caps() & ss::prov::kRingCapRxChained; }

  // One turn of what a face's calls and service thread do: the rings
  // read (TCP segments go to the stack), the timers due fired, then a
  // wait for frames no longer than the next timer.
  void pump() {
    stack_->poll_rx();
    tcp_->run_timers();
    const uint64_t due = tcp_->next_due(), now = tcp_->now();
    const uint64_t wait_us = due <= now ? 0 : std::min<uint64_t>(due - now, 10'000);
    wait_rings(static_cast<int>((wait_us + 999) / 1000));
  }
  // A connect from b to our port with 10 s send and receive timeouts:
  // its descriptor, or -errno.
  int connect_from_b() {
    const int fd = ns_->socket_in_b(SOCK_STREAM);
    const timeval bound{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kOurPort);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) return fd;
    const int err = errno;
    close(fd);
    return -err;
  }
  // Our listener on kOurPort and a's kernel listener beside it (as a
  // fork child's would be), non-blocking; b resolved.
  void listen_here_and_in_kernel(Socket** l, int* kernel_l) {
    ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, l), 0);
    resolve_neighbour(NetnsPair::kIpB);
    *kernel_l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);  // in a
    int one = 1;
    setsockopt(*kernel_l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const sockaddr_in any = sstest::inet("0.0.0.0", kOurPort);
    ASSERT_EQ(bind(*kernel_l, reinterpret_cast<const sockaddr*>(&any), sizeof any), 0);
    ASSERT_EQ(listen(*kernel_l, 4), 0);
  }
  // connect_from_b on a thread of its own while this one pumps the stack.
  int connect_from_b_pumping() {
    std::atomic<int> got{INT32_MIN};
    std::thread t([&] { got = connect_from_b(); });
    pump_until([&] { return got != INT32_MIN; });
    t.join();
    return got;
  }
  // Pumps until done(), or until kWait passed with progress() unchanged
  // (a slow machine, a sanitizer, a loss run: moving is not stuck).
  template <typename F, typename P = int (*)()>
  bool pump_until(
      F done, P progress = [] { return 0; }) {
    auto end = std::chrono::steady_clock::now() + kWait;
    auto last = progress();
    while (!done()) {
      const auto now = std::chrono::steady_clock::now();
      if (const auto p = progress(); p != last) {
        last = p;
        end = now + kWait;
      }
      if (now > end) return false;
      pump();
    }
    return true;
  }
  // The next hop's MAC: a kernel datagram to it makes the kernel resolve
  // it, then NetlinkView learns it.
  void resolve_neighbour(const char* peer) {
    const IpAddr ip = IpAddr::parse(peer);
    const int fd = socket(ip.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_storage ss;
    const socklen_t len = ip.to_sockaddr(9, 0, &ss);
    ASSERT_EQ(sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&ss), len), 1);
    close(fd);
    follow_kernel([&] {
      ss::net::Flow f;
      f.dst = ip;
      ss::net::TxPath path;
      ToKernel why;
      return resolver_->resolve(f, &path, &why) == 0;
    });
  }
  // Our client's connection to Linux's listener at peer (the next hop
  // resolved first); null after a failed assertion.
  Socket* connect_to_linux(const char* ours, const char* peer,
                           const ss::net::tcp::Config& cfg = {}) {
    resolve_neighbour(peer);
    FourTuple t;
    t.local = IpAddr::parse(ours);
    t.remote = IpAddr::parse(peer);
    t.local_port = kOurClientPort;
    t.remote_port = kLinuxPort;
    Socket* s = nullptr;
    ToKernel why;
    EXPECT_EQ(tcp_->connect(t, cfg, &s, &why), 0);
    return s;
  }
  // Sends what s takes of data for a while, pumping: the bytes sent.
  size_t send_for(Socket* s, const std::string& data, std::chrono::milliseconds how_long) {
    size_t sent = 0;
    const auto end = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < end) {
      const ssize_t n =
          tcp_->send(s, {reinterpret_cast<const uint8_t*>(data.data()) + sent, data.size() - sent});
      if (n > 0) sent += static_cast<size_t>(n);
      pump();
    }
    return sent;
  }
  // Sends all of data on s, pumping while the window is shut.
  void send_all(Socket* s, const std::string& data) {
    size_t off = 0;
    ASSERT_TRUE(pump_until(
        [&] {
          while (off < data.size()) {
            const ssize_t n = tcp_->send(
                s, {reinterpret_cast<const uint8_t*>(data.data()) + off, data.size() - off});
            if (n == -EAGAIN) return false;
            EXPECT_GT(n, 0) << strerror(static_cast<int>(-n));
            if (n <= 0) return true;
            off += static_cast<size_t>(n);
          }
          return true;
        },
        [&] { return off; }));
    EXPECT_EQ(off, data.size());
  }
  // Reads until end of stream (or want bytes, when want is not npos).
  std::string recv_all(Socket* s, size_t want = std::string::npos) {
    std::string got;
    bool eof = false;
    pump_until(
        [&] {
          uint8_t buf[16384];
          for (;;) {
            const ssize_t n = tcp_->recv(s, buf);
            if (n == -EAGAIN) return got.size() >= want;
            if (n <= 0) {
              eof = true;
              return true;
            }
            got.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
            if (got.size() >= want) return true;
          }
        },
        [&] { return got.size(); });
    if (want == std::string::npos) {
      EXPECT_TRUE(eof) << "no end of stream";
    }
    return got;
  }
  // No TCP socket of a's kernel on `port` (the connection is ours alone).
  void expect_no_kernel_socket(uint16_t port) {
    const std::string out = sstest::output("ss -Htan '( sport = :" + std::to_string(port) +
                                           " or dport = :" + std::to_string(port) + " )'");
    EXPECT_EQ(out, "") << "a's kernel has a TCP socket on port " << port;
  }

  // What a failed connection's end tells: its error, the resets each way,
  // the frames the program gave a's kernel, and both kernels' resets.
  std::string why_ended(Socket* s) {
    uint8_t b;
    const ssize_t r = tcp_->recv(s, {&b, 1}, true);  // peeks: -errno once failed
    const ss::net::tcp::Counters c = tcp_->connection_counters(s);
    ss::prov::xdp::Counters x;
    ss::prov::xdp::counters(NetnsPair::kIfA, &x);
    const std::string rsts = "nstat -asz TcpOutRsts TcpExtTCPAbortOnData | tr -s ' \\n' ' '";
    return "state " + std::to_string(static_cast<int>(tcp_->state(s))) + ", recv " +
           std::to_string(r) + ", RSTs in " + std::to_string(c.rst_in) + " out " +
           std::to_string(c.rst_out) + "; frames to a's kernel " + std::to_string(x.passed) +
           ", of them steered with no XSK " + std::to_string(x.no_socket) +
           "; a's kernel: " + sstest::output(rsts) +
           "; b's kernel: " + sstest::output("ip netns exec " + ns_->name_b() + " " + rsts);
  }
  // Linux's listener in b on peer:kLinuxPort (SO_RCVBUF rcvbuf if set), or -1.
  int linux_listener(const char* peer, int rcvbuf = 0) {
    const IpAddr ip = IpAddr::parse(peer);
    const int lfd = ns_->socket_in_b(SOCK_STREAM, ip.family);
    if (lfd < 0) return -1;
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // Linux moves a flow to another hash after an RTO, so onto the other
    // veth queue, where it overtakes what the first still holds: the
    // path would reorder. Its accepted ends inherit this.
    int keep_hash = 0;
    setsockopt(lfd, SOL_SOCKET, SO_TXREHASH, &keep_hash, sizeof keep_hash);
    if (rcvbuf > 0) setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_storage ss;
    const socklen_t len = ip.to_sockaddr(kLinuxPort, 0, &ss);
    if (bind(lfd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(lfd, 4) != 0) {
      ADD_FAILURE() << "Linux's listener on " << peer << ": " << strerror(errno);
      close(lfd);
      return -1;
    }
    return lfd;
  }

  // Our client against a Linux echo server in b: `bytes` each way.
  void client_to_linux(const char* ours, const char* peer, size_t bytes) {
    const int lfd = linux_listener(peer);
    ASSERT_GE(lfd, 0);
    std::atomic<size_t> echoed{0};
    std::string echo_end;   // why Linux's end stopped, for a failure's message
    std::thread echo([&] {  // Linux's end: echoes until our FIN, then closes
      const int c = accept(lfd, nullptr, nullptr);
      if (c < 0) {
        echo_end = std::string("accept: ") + strerror(errno);
        return;
      }
      const timeval bound{30, 0};  // our FIN never came: the test fails, not hangs
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
      char buf[65536];
      ssize_t n;
      while ((n = linux_read(c, buf, sizeof buf)) > 0) {
        const ssize_t w = write(c, buf, static_cast<size_t>(n));
        if (w != n) {
          echo_end =
              "write " + std::to_string(w) + " of " + std::to_string(n) + ": " + strerror(errno);
          break;
        }
        echoed += static_cast<size_t>(n);
      }
      if (n <= 0)
        echo_end = n == 0 ? "read: end of stream" : std::string("read: ") + strerror(errno);
      socklen_t len = sizeof linux_info_;
      getsockopt(c, IPPROTO_TCP, TCP_INFO, &linux_info_, &len);
      close(c);
    });
    resolve_neighbour(peer);
    const uint64_t redirected0 = redirected();
    ss::net::tcp::Config cfg;
    cfg.rcv_buf = cfg.snd_buf = 262144;
    cfg.mss = mss_;
    Socket* s = connect_to_linux(ours, peer, cfg);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(pump_until([&] { return tcp_->state(s) != State::kSynSent; }));
    ASSERT_EQ(tcp_->state(s), State::kEstablished);
    expect_no_kernel_socket(kOurClientPort);
    const std::string out = pattern(bytes, 1);
    std::string back;
    size_t off = 0;
    // Send and read at once: the echo's window closes otherwise.
    EXPECT_TRUE(pump_until(
        [&] {
          while (off < out.size()) {
            const ssize_t n = tcp_->send(
                s, {reinterpret_cast<const uint8_t*>(out.data()) + off, out.size() - off});
            if (n <= 0) break;
            off += static_cast<size_t>(n);
          }
          uint8_t buf[16384];
          ssize_t n;
          while ((n = tcp_->recv(s, buf)) > 0)
            back.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
          return back.size() >= out.size();
        },
        // Segments moving count too: an RTO backed off under loss (ASan's
        // slow RTTs) may send nothing new for longer than kWait.
        [&] {
          const ss::net::tcp::Counters c = tcp_->connection_counters(s);
          return off + back.size() + c.segs_out + c.segs_in;
        }));
    EXPECT_TRUE(back == out) << "echoed " << back.size() << " of " << out.size() << " bytes; "
                             << why_ended(s);
    EXPECT_EQ(tcp_->shutdown_write(s), 0);
    EXPECT_EQ(recv_all(s).size(), 0u) << "bytes past the echo";  // Linux's FIN after ours
    if (tcp_->state(s) != State::kTimeWait) {
      ss::net::tcp::Info info;
      const ss::net::tcp::Counters c = tcp_->connection_counters(s, &info);
      ADD_FAILURE() << "after our FIN: state " << static_cast<int>(tcp_->state(s)) << ", "
                    << c.retrans_segs << " sent again, " << c.rto_expiries << " RTOs, rto "
                    << info.rto_us << " us";
      pump_until([&] { return tcp_->state(s) == State::kTimeWait; });  // the FIN's last tries
    }
    echo.join();
    EXPECT_EQ(echoed.load(), bytes) << "Linux's end: " << echo_end;
    const ss::net::tcp::Counters c = tcp_->connection_counters(s);
    EXPECT_GE(redirected() - redirected0, c.segs_in)
        << "segments that did not come through the rings";
    EXPECT_GT(c.segs_in, bytes / 65536);
    last_ = c;
    tcp_->close(s);
    // TIME-WAIT is ours (we closed first): the connection stays until it
    // ends, so the flow does too.
    EXPECT_EQ(tcp_->connections(), 1u);
    close(lfd);
  }

  // Drops per mille of the segments to port in b and of those b sends,
  // at random: ours at b's input (nft's numgen: tc's netem is not in this
  // kernel), b's on the wire after its TCP sent them (lose.bpf.c).
  void lose_in_b(uint16_t port, int per_mille) {
    const std::string nft = "ip netns exec " + ns_->name_b() + " nft ";
    const std::string drop =
        " numgen random mod 1000 < " + std::to_string(per_mille) + " counter drop";
    ASSERT_EQ(sstest::run(nft + "add table inet loss"), 0);
    ASSERT_EQ(sstest::run(nft + "'add chain inet loss in { type filter hook input priority 0; }'"),
              0);
    // Our segments with data apart (its counter: dropped_data_to_b).
    for (const char* len : {" meta length > 100", " meta length <= 100"})
      ASSERT_EQ(sstest::run(nft + "'add rule inet loss in tcp dport " + std::to_string(port) + len +
                            drop + "'"),
                0);
    ASSERT_NO_FATAL_FAILURE(lose_from_b(static_cast<uint32_t>(per_mille)));
  }
  void lose_from_b(uint32_t per_mille) {
    bpf_object* obj = bpf_object__open_file(SS_LOSE_OBJ, nullptr);
    ASSERT_NE(obj, nullptr) << SS_LOSE_OBJ << ": " << strerror(errno);
    lose_.reset(obj);
    bpf_map* rodata = bpf_object__find_map_by_name(obj, ".rodata");
    ASSERT_NE(rodata, nullptr);
    ASSERT_EQ(bpf_map__set_initial_value(rodata, &per_mille, sizeof per_mille), 0);
    ASSERT_EQ(bpf_object__load(obj), 0) << strerror(errno);
    const int prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "ss_lose"));
    const int rc = ns_->in_b([&] {
      LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(if_nametoindex(NetnsPair::kIfB)),
                  .attach_point = BPF_TC_EGRESS);
      const int err = bpf_tc_hook_create(&hook);
      if (err && err != -EEXIST) return err;
      LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog);
      return bpf_tc_attach(&hook, &opts);  // gone with b's namespace
    });
    ASSERT_EQ(rc, 0) << "tc egress program on " << NetnsPair::kIfB << ": " << strerror(-rc);
  }
  // The segments those rules dropped.
  uint64_t dropped_in_b() {
    const std::string out =
        sstest::output("ip netns exec " + ns_->name_b() + " nft list table inet loss");
    uint64_t n = 0;
    for (size_t at = 0; (at = out.find("packets ", at)) != std::string::npos; at += 8)
      n += std::stoull(out.substr(at + 8));
    return n + dropped_from_b();
  }
  // b's frames lost on the wire (a GSO burst is one).
  uint64_t dropped_from_b() {
    bpf_map* bss = lose_ ? bpf_object__find_map_by_name(lose_.get(), ".bss") : nullptr;
    const uint32_t zero = 0;
    uint64_t n = 0;
    if (bss) bpf_map_lookup_elem(bpf_map__fd(bss), &zero, &n);
    return n;
  }
  // Those of ours that carried data: what we must send again.
  uint64_t dropped_data_to_b() {
    const std::string out =
        sstest::output("ip netns exec " + ns_->name_b() + " nft list chain inet loss in");
    const size_t rule = out.find("meta length > 100");
    const size_t at = rule == std::string::npos ? rule : out.find("packets ", rule);
    return at == std::string::npos ? 0 : std::stoull(out.substr(at + 8));
  }

  struct CloseObject {
    void operator()(bpf_object* o) const { bpf_object__close(o); }
  };
  std::unique_ptr<bpf_object, CloseObject> lose_;  // lose_from_b's program
  std::unique_ptr<ss::net::PacketTx> packets_;
  std::unique_ptr<Stack> tcp_;
  std::atomic<int> first_ready_{0};  // on_first_ready's calls
  ss::net::tcp::Counters last_;      // client_to_linux's connection at its end
  tcp_info linux_info_{};            // and Linux's end of it
  uint16_t mss_ = 1460;              // client_to_linux's bound (libvma.so's: none, 0xffff)
};

TEST_F(TcpRing, OurClientTalksToLinuxOverIpv4) {
  client_to_linux(NetnsPair::kIpA, NetnsPair::kIpB, 1 << 20);
}

TEST_F(TcpRing, OurClientTalksToLinuxOverIpv6) {
  client_to_linux(NetnsPair::kIp6A, NetnsPair::kIp6B, 256 << 10);
}

// Linux sends 32 MiB as fast as it can to our client, which reads as it
// comes: on a path that loses and reorders nothing (one hash, so one veth
// queue, for the flow's life), nothing arrives out of order and
// Linux sends under 1 in 1000 segments again (TCP_INFO's retransmits), so
// nothing was dropped on our side (rings, fill, receive queue, window).
TEST_F(TcpRing, BulkFromLinuxLosesNothingHere) {
  const int lfd = linux_listener(NetnsPair::kIpB);
  ASSERT_GE(lfd, 0);
  constexpr size_t kBytes = 32 << 20;
  tcp_info info{};
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    const int c = accept(lfd, nullptr, nullptr);
    if (c < 0) return;
    const std::string block = pattern(1 << 16, 3);
    for (size_t off = 0; off < kBytes;) {
      const ssize_t n = write(c, block.data(), std::min(block.size(), kBytes - off));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    shutdown(c, SHUT_WR);
    char b;
    while (linux_read(c, &b, 1) > 0) {
    }
    socklen_t len = sizeof info;
    getsockopt(c, IPPROTO_TCP, TCP_INFO, &info, &len);
    close(c);
    sent = true;
  });
  Socket* s = connect_to_linux(NetnsPair::kIpA, NetnsPair::kIpB);
  ASSERT_NE(s, nullptr);
  size_t got = 0;
  EXPECT_TRUE(pump_until([&] {
    uint8_t buf[65536];
    ssize_t n;
    while ((n = tcp_->recv(s, buf)) > 0) got += static_cast<size_t>(n);
    return n == 0;
  }));
  const ss::net::tcp::Counters c = tcp_->connection_counters(s);  // before close frees the handle
  tcp_->close(s);
  EXPECT_TRUE(pump_until([&] { return sent.load(); }));
  sender.join();
  close(lfd);
  EXPECT_EQ(got, kBytes);
  uint64_t no_fill = 0, rx_full = 0;
  for (auto& q : queues_) {
    no_fill += q.queue->stats().rx_dropped_no_fill;
    rx_full += q.queue->stats().rx_dropped_rx_full;
  }
  const auto rx = stack_->rx_counters();
  std::printf(
      "32 MiB from Linux: its retransmits %u; here %lu segments in, %lu out of order, "
      "%lu out of window, %lu refused, %lu dups; rings: %lu no fill, %lu rx full, %lu "
      "fill dry\n",
      info.tcpi_total_retrans, (unsigned long)c.segs_in, (unsigned long)c.ooo_segs,
      (unsigned long)c.out_of_window, (unsigned long)c.ooo_refused, (unsigned long)c.dup_segs,
      (unsigned long)no_fill, (unsigned long)rx_full, (unsigned long)rx.fill_dry);
  // Linux sends again when a loaded machine delays our ACKs (a tail loss
  // probe, or an RTO that resends a whole window): those copies arrive as
  // duplicates. Segments lost or reordered here would show as
  // out-of-order arrivals, and as resent segments that were no duplicates.
  EXPECT_EQ(c.ooo_segs, 0u) << "segments arrived out of order";
  const uint64_t resent = info.tcpi_total_retrans;
  EXPECT_LT((resent - std::min<uint64_t>(resent, c.dup_segs)) * 1000, c.segs_in)
      << "Linux sent again many segments that never arrived";
}

// 3% of the segments each way lost in b (nft): the data still arrives
// whole, repaired by our recovery (SACK with Linux, RACK) and Linux's.
// The route to the peer removed mid-stream: nothing of ours leaves while
// it is gone (as from Linux's TCP: the data waits, the timers try again,
// each try counted as path_lost), and the stream ends whole once the
// route is back.
TEST_F(TcpRing, ARemovedRouteHoldsTheSendsUntilItIsBack) {
  const int lfd = linux_listener(NetnsPair::kIpB);
  ASSERT_GE(lfd, 0);
  std::atomic<size_t> got{0};
  std::thread reader([&] {  // Linux's end: reads to our FIN
    const int c = accept(lfd, nullptr, nullptr);
    if (c < 0) return;
    char buf[65536];
    ssize_t n;
    while ((n = linux_read(c, buf, sizeof buf)) > 0) got += static_cast<size_t>(n);
    close(c);
  });
  Socket* s = connect_to_linux(NetnsPair::kIpA, NetnsPair::kIpB);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(pump_until([&] { return tcp_->state(s) == State::kEstablished; }));
  const std::string first = pattern(100000, 3), second = pattern(200000, 4);
  send_all(s, first);
  ASSERT_TRUE(pump_until([&] { return got.load() == first.size(); }));
  const std::string route = "ip -n " + ns_->name_a() + " route ";
  const std::string net = "10.199.0.0/24 dev " + std::string(NetnsPair::kIfA);
  ss::net::Flow f;
  f.dst = IpAddr::parse(NetnsPair::kIpB);
  ss::net::TxPath path;
  ToKernel why;
  ASSERT_EQ(sstest::run(route + "del " + net), 0);
  follow_kernel([&] { return resolver_->resolve(f, &path, &why) != 0; });
  const uint64_t lost0 = tcp_->counters().path_lost;
  const ssize_t queued =
      tcp_->send(s, {reinterpret_cast<const uint8_t*>(second.data()), second.size()});
  ASSERT_GT(queued, 0);
  // The sender's tries, each stopped: nothing reaches Linux meanwhile.
  ASSERT_TRUE(pump_until([&] { return tcp_->counters().path_lost >= lost0 + 3; }));
  EXPECT_EQ(got.load(), first.size()) << "segments left with no route";
  ASSERT_EQ(sstest::run(route + "add " + net), 0);
  follow_kernel([&] { return resolver_->resolve(f, &path, &why) == 0; });
  send_all(s, second.substr(static_cast<size_t>(queued)));
  EXPECT_EQ(tcp_->shutdown_write(s), 0);
  EXPECT_TRUE(pump_until([&] { return got.load() == first.size() + second.size(); }))
      << got.load() << " of " << first.size() + second.size() << " bytes";
  reader.join();
  tcp_->close(s);
  close(lfd);
}

TEST_F(TcpRing, LossBothWaysIsRepaired) {
  if (sstest::run("command -v nft >/dev/null") != 0) GTEST_SKIP() << "no nft (nftables)";
  ASSERT_NO_FATAL_FAILURE(lose_in_b(kLinuxPort, 30));
  client_to_linux(NetnsPair::kIpA, NetnsPair::kIpB, 512 << 10);
  const uint64_t dropped = dropped_in_b();
  EXPECT_GT(dropped, 0u) << "nft dropped nothing";
  if (dropped_data_to_b() > 0) {  // random: 3% of ~400 segments, all but sure
    EXPECT_GT(last_.retrans_segs, 0u) << "nothing sent again";
    EXPECT_GT(last_.sack_recoveries + last_.rto_expiries + last_.tlp_probes, 0u);
  }
  std::printf(
      "3%% loss each way (%lu dropped), 512 KiB each way: %lu segments in, %lu out, "
      "%lu sent again; "
      "%lu SACK recoveries, %lu lost by RACK, %lu tail loss probes, %lu RTOs, %lu "
      "D-SACKs\n",
      (unsigned long)dropped, (unsigned long)last_.segs_in, (unsigned long)last_.segs_out,
      (unsigned long)last_.retrans_segs, (unsigned long)last_.sack_recoveries,
      (unsigned long)last_.rack_lost, (unsigned long)last_.tlp_probes,
      (unsigned long)last_.rto_expiries, (unsigned long)last_.dsacks_in);
}

// The same through a packet socket with GSO (Stack::Config::packets):
// every segment of ours leaves there, none on the tx ring, bursts merged
// (more segments than packets), and Linux's end gets the bytes whole,
// lost ones repaired (retransmissions leave the same way).
class TcpRingGso : public TcpRing {
 protected:
  bool gso() const override { return true; }
  void expect_merged() {
    const ss::net::tcp::StackCounters st = tcp_->counters();
    std::printf("GSO: %lu segments in %lu packets, %lu frames on the ring, %lu lost\n",
                (unsigned long)st.gso_segments, (unsigned long)st.gso_packets,
                (unsigned long)st.frames_out, (unsigned long)st.tx_errors);
    EXPECT_EQ(st.frames_out, 0u) << "segments on the tx ring";
    EXPECT_GT(st.gso_packets, 0u);
    EXPECT_GT(st.gso_segments, st.gso_packets) << "no burst merged";
    EXPECT_EQ(st.tx_errors, 0u);
  }
};

TEST_F(TcpRingGso, OurClientTalksToLinuxOverIpv4) {
  client_to_linux(NetnsPair::kIpA, NetnsPair::kIpB, 4 << 20);
  expect_merged();
}

TEST_F(TcpRingGso, OurClientTalksToLinuxOverIpv6) {
  client_to_linux(NetnsPair::kIp6A, NetnsPair::kIp6B, 1 << 20);
  expect_merged();
}

// At MTU 9000 the packet socket sends segments of the path's MTU. Rings
// bound with multi-buffer AF_XDP (Linux 6.6) take Linux's segments of the
// MTU too, each over several frames; without it the MSS we announce fits
// the rings' 2 KiB frames and Linux sends none larger than one.
class TcpRingJumbo : public TcpRingGso {
 protected:
  void SetUp() override {
    mss_ = 0xffff;
    start("sstcp", 1024, 9000);
  }
};

TEST_F(TcpRingJumbo, SegmentsOfTheMtuBothWays) {
  client_to_linux(NetnsPair::kIpA, NetnsPair::kIpB, 4 << 20);
  expect_merged();
  std::printf("MTU 9000: Linux received segments of up to %u bytes, sends %u\n",
              linux_info_.tcpi_rcv_mss, linux_info_.tcpi_snd_mss);
  EXPECT_GT(linux_info_.tcpi_rcv_mss, 2048u) << "no segment larger than a frame";
  const uint64_t linked = stack_->rx_counters().tcp_linked;
  std::printf("%s rings: %lu segments in over several frames\n",
              multi_buffer() ? "multi-buffer" : "single-buffer", (unsigned long)linked);
  if (multi_buffer()) {
    EXPECT_GT(linux_info_.tcpi_snd_mss, 2048u) << "Linux sent no segment larger than a frame";
    EXPECT_GT(linked, 0u);
  } else {
    EXPECT_LE(linux_info_.tcpi_snd_mss, 2048u - XDP_PACKET_HEADROOM - 14 - 20 - 20);
    EXPECT_EQ(linked, 0u);
  }
}

// Loss of segments of the MTU: held out of order and trimmed a frame at a
// time where they span several.
TEST_F(TcpRingJumbo, LossBothWaysIsRepaired) {
  if (sstest::run("command -v nft >/dev/null") != 0) GTEST_SKIP() << "no nft (nftables)";
  ASSERT_NO_FATAL_FAILURE(lose_in_b(kLinuxPort, 50));
  client_to_linux(NetnsPair::kIpA, NetnsPair::kIpB, 4 << 20);
  std::printf(
      "MTU 9000, 5%% loss each way (%lu dropped): %lu segments in (%lu over several "
      "frames), %lu out, %lu sent again, %lu out of order\n",
      (unsigned long)dropped_in_b(), (unsigned long)last_.segs_in,
      (unsigned long)stack_->rx_counters().tcp_linked, (unsigned long)last_.segs_out,
      (unsigned long)last_.retrans_segs, (unsigned long)last_.ooo_segs);
  EXPECT_GT(dropped_in_b(), 0u) << "nft dropped nothing";
}

// b's nft sees a merged packet whole (veth hands it over uncut): 5% of
// the packets, each up to ~13 segments of ours.
TEST_F(TcpRingGso, LossBothWaysIsRepaired) {
  if (sstest::run("command -v nft >/dev/null") != 0) GTEST_SKIP() << "no nft (nftables)";
  ASSERT_NO_FATAL_FAILURE(lose_in_b(kLinuxPort, 50));
  client_to_linux(NetnsPair::kIpA, NetnsPair::kIpB, 1 << 20);
  std::printf(
      "5%% loss each way (%lu dropped, %lu of our data), 1 MiB each way: %lu segments in, "
      "%lu out, %lu sent again; %lu SACK recoveries, %lu tail loss probes, %lu RTOs\n",
      (unsigned long)dropped_in_b(), (unsigned long)dropped_data_to_b(),
      (unsigned long)last_.segs_in, (unsigned long)last_.segs_out,
      (unsigned long)last_.retrans_segs, (unsigned long)last_.sack_recoveries,
      (unsigned long)last_.tlp_probes, (unsigned long)last_.rto_expiries);
  EXPECT_GT(dropped_in_b(), 0u) << "nft dropped nothing";
  // Random: ~60 merged packets of ours at 5% (0.95^60: one run in 20
  // loses none of them).
  if (dropped_data_to_b() > 0) {
    EXPECT_GT(last_.retrans_segs, 0u) << "nothing sent again";
  }
  expect_merged();
}

// Segments a hostile host in b crafts (a raw socket: b's kernel adds the
// IP header, the TCP header is ours), each answered as RFC 9293 and RFC
// 5961 say and counted: a stray ACK to a listening port gets a RST; a
// SYN with a bad checksum and one whose data offset runs past it are
// dropped; on an established connection a RST out of window and a SYN
// draw a challenge ACK (at most one per 500 ms, as Linux) and the
// connection lives on (its data still flows).
TEST_F(TcpRing, CraftedSegmentsAreAnsweredAndCounted) {
  using ss::net::tcp::Header;
  namespace tcp = ss::net::tcp;
  const int raw = ns_->socket_in_b(SOCK_RAW, AF_INET, IPPROTO_TCP);
  ASSERT_GE(raw, 0) << strerror(errno);
  const timeval bound{2, 0};
  setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  const IpAddr a = IpAddr::parse(NetnsPair::kIpA), b = IpAddr::parse(NetnsPair::kIpB);
  // Sends h (and `extra` header bytes claimed by data_offset_words) from b.
  auto craft = [&](const Header& h, bool bad_sum, int data_offset_words = 5) {
    uint8_t seg[tcp::kHeaderLen];
    tcp::write_header(seg, h, 0);
    seg[tcp::kDataOffsetOffset] = static_cast<uint8_t>(data_offset_words << 4);
    tcp::fill_checksum(4, b.bytes, a.bytes, seg);
    if (bad_sum) seg[tcp::kChecksumOffset] ^= 0x5a;
    const sockaddr_in to = sstest::inet(NetnsPair::kIpA, h.dst_port);
    ASSERT_EQ(sendto(raw, seg, sizeof seg, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(sizeof seg));
  };
  // The next segment from a to `port` in b that `pick` accepts, pumping meanwhile.
  auto answer = [&](uint16_t port, auto pick) {
    Header got{};
    const bool seen = pump_until([&] {
      uint8_t buf[2048];
      const ssize_t n = recv(raw, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 20 + static_cast<ssize_t>(tcp::kHeaderLen)) return false;
      const size_t ihl = (buf[0] & 0xf) * 4u;
      std::span<const uint8_t> data;
      Header h;
      if (tcp::parse_header({buf + ihl, static_cast<size_t>(n) - ihl}, &h, &data) !=
              tcp::HeaderVerdict::kOk ||
          h.dst_port != port || !pick(h))
        return false;
      got = h;
      return true;
    });
    EXPECT_TRUE(seen) << "no answer to port " << port;
    return got;
  };
  resolve_neighbour(NetnsPair::kIpB);

  // A listener: a stray ACK gets <SEQ=SEG.ACK><CTL=RST>.
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(a, kOurPort, ListenerConfig{}, &l), 0);
  Header h;
  h.src_port = 5555;
  h.dst_port = kOurPort;
  h.seq = 1000;
  h.ack = 777777;
  h.flags = tcp::kAck;
  h.window = 1000;
  craft(h, false);
  const Header rst = answer(5555, [](const Header& x) { return x.flags & tcp::kRst; });
  EXPECT_EQ(rst.seq, 777777u);
  EXPECT_EQ(tcp_->listener_counters(l).resets_sent, 1u);
  // A SYN with a bad checksum, and one whose data offset (15 words) runs
  // past the 20 bytes sent: dropped, no SYN-ACK.
  const uint64_t bad_sum0 = tcp_->counters().bad_checksum, bad_hdr0 = tcp_->counters().bad_header;
  h.flags = tcp::kSyn;
  h.ack = 0;
  craft(h, true);
  craft(h, false, 15);
  EXPECT_TRUE(pump_until([&] {
    return tcp_->counters().bad_checksum > bad_sum0 && tcp_->counters().bad_header > bad_hdr0;
  }));
  EXPECT_EQ(tcp_->listener_counters(l).syns, 0u) << "a hostile SYN reached the listener";
  tcp_->close(l);

  // An established connection to a Linux echo server in b.
  const int lfd = ns_->socket_in_b(SOCK_STREAM);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in at = sstest::inet(NetnsPair::kIpB, kLinuxPort);
  ASSERT_EQ(bind(lfd, reinterpret_cast<const sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(listen(lfd, 1), 0);
  std::thread echo([&] {
    const int c = accept(lfd, nullptr, nullptr);
    char buf[4096];
    ssize_t n;
    while (c >= 0 && (n = linux_read(c, buf, sizeof buf)) > 0)
      if (write(c, buf, static_cast<size_t>(n)) != n) break;
    if (c >= 0) close(c);
  });
  FourTuple t;
  t.local = a;
  t.remote = b;
  t.local_port = kOurClientPort;
  t.remote_port = kLinuxPort;
  Socket* s = nullptr;
  ToKernel why;
  ASSERT_EQ(tcp_->connect(t, ss::net::tcp::Config{}, &s, &why), 0);
  ASSERT_TRUE(pump_until([&] { return tcp_->state(s) == State::kEstablished; }));
  const uint64_t challenges0 = tcp_->connection_counters(s).challenge_acks;
  h.src_port = kLinuxPort;
  h.dst_port = kOurClientPort;
  h.seq = 123;  // out of the window: RFC 5961 §3.2 answers with an ACK, no reset
  h.flags = tcp::kRst;
  craft(h, false);
  h.flags = tcp::kSyn;  // a SYN on a synchronized connection: §4, the same
  craft(h, false);
  EXPECT_TRUE(
      pump_until([&] { return tcp_->connection_counters(s).challenge_acks >= challenges0 + 1; }));
  EXPECT_EQ(tcp_->state(s), State::kEstablished) << "a blind segment broke the connection";
  // Data still flows both ways.
  const std::string msg = pattern(3000, 9);
  ASSERT_EQ(tcp_->send(s, {reinterpret_cast<const uint8_t*>(msg.data()), msg.size()}),
            static_cast<ssize_t>(msg.size()));
  EXPECT_EQ(recv_all(s, msg.size()), msg);
  std::printf(
      "crafted: RST to a stray ACK, %lu bad checksums and %lu bad headers dropped, %lu "
      "challenge ACKs for a blind RST and SYN\n",
      (unsigned long)(tcp_->counters().bad_checksum - bad_sum0),
      (unsigned long)(tcp_->counters().bad_header - bad_hdr0),
      (unsigned long)(tcp_->connection_counters(s).challenge_acks - challenges0));
  tcp_->close(s, /*abort=*/true);
  shutdown(lfd, SHUT_RDWR);
  close(lfd);
  echo.join();
  close(raw);
}

// A Linux client connects to our listener, sends, we echo, it closes; the
// listener counts the handshake; after both closes nothing is left of the
// connection but our side's end: Linux closed first, so we pass through
// LAST-ACK and the connection and its hold on the flow go.
TEST_F(TcpRing, LinuxClientTalksToOurListener) {
  Socket* l = nullptr;
  ListenerConfig lc;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, lc, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  constexpr size_t kBytes = 300 << 10;
  const std::string msg = pattern(kBytes, 7);
  std::string echoed;
  int client_err = 0;
  std::atomic<bool> client_done{false};
  std::thread client([&] {
    const int fd = ns_->socket_in_b(SOCK_STREAM);
    const timeval bound{10, 0};  // connect, read and write give up: no hang
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kOurPort);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
      client_err = errno;
      close(fd);
      client_done = true;
      return;
    }
    echoed = echo_through(fd, msg);
    client_done = true;
  });
  Socket* c = nullptr;
  FourTuple peer;
  EXPECT_TRUE(pump_until([&] { return tcp_->accept(l, &c, &peer) == 0; }));
  if (!c) {
    const auto st = tcp_->counters();
    const auto lc = tcp_->listener_counters(l);
    ADD_FAILURE() << "no connection: segments_in " << st.segments_in << ", no_socket "
                  << st.no_socket << ", bad_checksum " << st.bad_checksum << ", frames_out "
                  << st.frames_out << ", path_lost " << st.path_lost << "; syns " << lc.syns
                  << ", handshakes " << lc.handshakes << ", failed " << lc.failed_handshakes;
    client.join();
    return;
  }
  EXPECT_EQ(peer.remote, IpAddr::parse(NetnsPair::kIpB));
  EXPECT_EQ(peer.local_port, kOurPort);
  // Echo until Linux's FIN, then ours.
  std::string got;
  size_t sent = 0;
  bool eof = false;
  EXPECT_TRUE(pump_until([&] {
    uint8_t buf[16384];
    ssize_t n;
    while ((n = tcp_->recv(c, buf)) > 0)
      got.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
    if (n == 0) eof = true;
    while (sent < got.size()) {
      const ssize_t m =
          tcp_->send(c, {reinterpret_cast<const uint8_t*>(got.data()) + sent, got.size() - sent});
      if (m <= 0) break;
      sent += static_cast<size_t>(m);
    }
    return eof && sent == got.size();
  }));
  tcp_->close(c);
  // What is still queued goes out as Linux's ACKs come in.
  EXPECT_TRUE(pump_until([&] { return client_done.load(); }));
  client.join();
  EXPECT_EQ(client_err, 0) << strerror(client_err);
  EXPECT_TRUE(got == msg) << "received " << got.size() << " of " << msg.size();
  EXPECT_TRUE(echoed == msg) << "echoed " << echoed.size() << " of " << msg.size();
  EXPECT_EQ(tcp_->listener_counters(l).handshakes, 1u);
  EXPECT_TRUE(pump_until([&] { return tcp_->connections() == 0; })) << "LAST-ACK never ended";
  expect_no_kernel_socket(kOurPort);
  tcp_->close(l);
}

// What a fork child builds over its parent's queues to serve TCP: its
// own frames, a JoinedQueue on each queue, the packet socket its parent
// made to send, its own view of the kernel and its own stacks
// (tcp_ring_tests' rig, in the child's slot).
struct JoinedRig {
  std::shared_ptr<ss::prov::xdp::Device> dev;
  std::unique_ptr<ss::mem::Pool> pool;
  std::vector<std::unique_ptr<ss::prov::RingQueue>> queues;
  std::unique_ptr<ss::prov::xdp::XdpSteering> steering;
  std::unique_ptr<ss::net::NetlinkView> view;
  std::unique_ptr<ss::net::NetlinkTxResolver> resolver;
  std::unique_ptr<ss::net::PacketTx> packets;
  std::unique_ptr<ss::net::FrameTx> frames;
  std::unique_ptr<Stack> tcp;
  std::unique_ptr<ss::net::UdpStack> stack;

  // 0, or the first step's -errno.
  int build(const ss::prov::xdp::DeviceShare& ds, const std::vector<ss::prov::xdp::QueueShare>& qs,
            int packet_fd) {
    namespace xdp = ss::prov::xdp;
    if (int err = xdp::Device::join(NetnsPair::kIfA, ds, &dev)) return err;
    ss::mem::PoolOptions opt;
    opt.frame_size = 2048;
    opt.frames_per_chunk = 2048;
    opt.backing = ss::mem::Backing::kPrivate;
    if (int err = ss::mem::Pool::create(opt, &pool)) return err;
    ss::net::UdpStack::Config cfg;
    for (const xdp::QueueShare& q : qs) {
      queues.emplace_back();
      if (int err =
              xdp::JoinedQueue::create(NetnsPair::kIfA, q, dev, pool.get(), 512, &queues.back()))
        return err;
      cfg.rings.push_back({queues.back().get(), pool.get()});
    }
    steering = std::make_unique<xdp::XdpSteering>(dev);
    cfg.ifindex = static_cast<int>(if_nametoindex(NetnsPair::kIfA));
    if (int err = ss::net::NetlinkView::open({}, &view)) return err;
    resolver = std::make_unique<ss::net::NetlinkTxResolver>(view.get(), cfg.ifindex);
    if (int err = ss::net::PacketTx::adopt(packet_fd, &packets)) return err;
    frames = std::make_unique<ss::net::FrameTx>(queues.front().get(), pool.get());  // unused
    Stack::Config c;
    c.steering = steering.get();
    c.tx = frames.get();
    c.packets = packets.get();
    c.resolver = resolver.get();
    if (!(queues.front()->caps() & ss::prov::kRingCapRxChained))
      c.rx_frame_max = 2048 - XDP_PACKET_HEADROOM;
    if (int err = Stack::create(c, &tcp)) return err;
    cfg.steering = steering.get();
    cfg.initial_fill = 0;  // the parent's frames fill the rings
    cfg.tcp = tcp.get();
    return ss::net::UdpStack::create(cfg, &stack);
  }
  void pump() {
    stack->poll_rx();
    tcp->run_timers();
    std::vector<pollfd> fds;
    for (auto& q : queues) {
      short ev = 0;
      fds.push_back({q->poll_fd(ss::prov::Ring::kRx, &ev), ev, 0});
    }
    poll(fds.data(), fds.size(), 5);
  }
};

// A fork child's echo in its own stack: of connection c, or of the
// first one listener l accepts, to its end of stream; then the close, and
// the wait for the stack to let it go. 0 when all that went in 20 s.
int echo_in_child(JoinedRig& rig, Socket* l, Socket* c) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  FourTuple peer;
  std::string got;
  size_t sent = 0;
  bool eof = false;
  while (std::chrono::steady_clock::now() < end) {
    rig.pump();
    if (!c && rig.tcp->accept(l, &c, &peer) != 0) continue;
    uint8_t buf[16384];
    ssize_t n;
    while ((n = rig.tcp->recv(c, buf)) > 0)
      got.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
    if (n == 0) eof = true;
    while (sent < got.size()) {
      const ssize_t m = rig.tcp->send(
          c, {reinterpret_cast<const uint8_t*>(got.data()) + sent, got.size() - sent});
      if (m <= 0) break;
      sent += static_cast<size_t>(m);
    }
    if (eof && sent == got.size()) break;
  }
  if (!c || !eof) return 2;
  rig.tcp->close(c);
  while (rig.tcp->connections() > 0 && std::chrono::steady_clock::now() < end) rig.pump();
  return rig.tcp->connections() == 0 ? 0 : 3;
}

// The child's side of the test below: as nobody (as nginx's workers
// change their user), listens on kOurPort in its own stack, says its slot
// (or -errno) on `up`, echoes one connection to its end and waits for it
// to close. Its exit status: 0 when all that went.
int serve_in_child(const ss::prov::xdp::DeviceShare& ds,
                   const std::vector<ss::prov::xdp::QueueShare>& qs, int packet_fd, int up) {
  constexpr uid_t kNobody = 65534;
  JoinedRig rig;
  int32_t said = setgroups(0, nullptr) || setgid(kNobody) || setuid(kNobody) ? -errno : 0;
  // Unprivileged now: no AF_XDP socket of its own (else ECANCELED).
  if (const int own = ss::prov::xdp::JoinedQueue::open_socket(); said == 0 && own != -EPERM)
    said = own >= 0 ? (close(own), -ECANCELED) : own;
  if (said == 0) said = rig.build(ds, qs, packet_fd);
  Socket* l = nullptr;
  if (said == 0) said = rig.tcp->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l);
  if (said == 0) said = static_cast<int32_t>(rig.dev->slot());
  if (write(up, &said, sizeof said) != sizeof said || said <= 0) return 1;
  return echo_in_child(rig, l, nullptr);
}

// A fork child joins the parent's queues, on sockets the parent made for
// it, and listens on the parent's port in its own stack; the parent gives
// the port's group to the child's slot, after marking its own
// connections: a Linux client's connection is the child's, echoed
// intact, and the parent's listener sees no SYN of it.
TEST_F(TcpRing, AForkChildsStackServesTheConnectionsOfItsSlot) {
  namespace xdp = ss::prov::xdp;
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  sstest::ChildReaper reap{0};
  int32_t slot = 0;
  std::shared_ptr<xdp::Device> dev;
  ASSERT_NO_FATAL_FAILURE(fork_joined(serve_in_child, &reap, &slot, &dev));
  const pid_t pid = reap.pid;
  ASSERT_GT(slot, 0) << strerror(-slot) << " (ECANCELED: the child kept CAP_NET_RAW)";
  ASSERT_EQ(tcp_->own_open(), 0);
  xdp::Flow flow;
  flow.proto = IPPROTO_TCP;
  flow.port = htons(kOurPort);
  const uint32_t slots[] = {static_cast<uint32_t>(slot)};
  ASSERT_EQ(dev->set_group(flow, slots, 1), 0);

  constexpr size_t kBytes = 300 << 10;
  const std::string msg = pattern(kBytes, 11);
  std::string echoed;
  std::atomic<bool> client_done{false};
  std::thread client([&] {
    if (const int fd = connect_from_b(); fd >= 0) echoed = echo_through(fd, msg);
    client_done = true;
  });
  EXPECT_TRUE(pump_until([&] { return client_done.load(); }));
  client.join();
  EXPECT_TRUE(echoed == msg) << "echoed " << echoed.size() << " of " << msg.size();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  reap.release();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(tcp_->listener_counters(l).syns, 0u) << "the child's SYN reached the parent";
  EXPECT_EQ(dev->set_group(flow, nullptr, 0), 0);
  tcp_->close(l);
}

// The child's side of the test below: joins the parent's queues, says
// its slot on `up`, reads the connection the parent hands it on `down`
// (its length, then encode_handover's bytes), adopts it in its own stack
// and echoes everything from there to the end of stream. Its exit
// status: 0 when all that went.
int adopt_in_child(const ss::prov::xdp::DeviceShare& ds,
                   const std::vector<ss::prov::xdp::QueueShare>& qs, int packet_fd, int up,
                   int down) {
  JoinedRig rig;
  int32_t said = rig.build(ds, qs, packet_fd);
  if (said == 0) said = static_cast<int32_t>(rig.dev->slot());
  if (write(up, &said, sizeof said) != sizeof said || said <= 0) return 1;
  uint64_t len = 0;
  if (read(down, &len, sizeof len) != sizeof len || len > (64u << 20)) return 2;
  std::vector<uint8_t> bytes(len);
  for (size_t off = 0; off < len;) {
    const ssize_t n = read(down, bytes.data() + off, len - off);
    if (n <= 0) return 3;
    off += static_cast<size_t>(n);
  }
  FourTuple t;
  Handover h;
  if (ss::net::tcp::decode_handover(bytes, &t, &h) != 0) return 4;
  Socket* c = nullptr;
  ss::net::ToKernel why;
  if (const int r = rig.tcp->adopt(t, h, ss::net::tcp::Config{}, &c, &why); r != 0) {
    std::fprintf(stderr, "child: adopt: %d %s\n", r, strerror(-r));
    return 5;
  }
  return echo_in_child(rig, nullptr, c);
}

// A connection carried from one process's stack to another's (a fork
// child's, on the parent's queues in a slot of its own), as an
// accept-then-fork server's: the parent accepts Linux's client on the
// rings and echoes the first 100 KB, then hands the connection over
// mid-stream (bytes unread and in flight) to the child, which adopts it
// and echoes the rest. Linux's client gets all 600 KB back intact, never
// reset.
TEST_F(TcpRing, AConnectionHandedToAForkChildsStackGoesOnThere) {
  namespace xdp = ss::prov::xdp;
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  int down[2];
  ASSERT_EQ(pipe2(down, O_CLOEXEC), 0);
  sstest::ChildReaper reap{0};
  int32_t slot = 0;
  std::shared_ptr<xdp::Device> dev;
  ASSERT_NO_FATAL_FAILURE(fork_joined(
      [&](const xdp::DeviceShare& ds, const std::vector<xdp::QueueShare>& qs, int packet_fd,
          int up) {
        close(down[1]);
        return adopt_in_child(ds, qs, packet_fd, up, down[0]);
      },
      &reap, &slot, &dev));
  const pid_t pid = reap.pid;
  close(down[0]);
  ASSERT_GT(slot, 0) << strerror(-slot);
  ASSERT_EQ(tcp_->own_open(), 0);

  constexpr size_t kBytes = 600 << 10, kHere = 100 << 10;
  const std::string msg = pattern(kBytes, 17);
  std::string echoed;
  std::atomic<bool> client_done{false};
  std::thread client([&] {
    if (const int fd = connect_from_b(); fd >= 0) echoed = echo_through(fd, msg);
    client_done = true;
  });
  Socket* c = nullptr;
  FourTuple peer;
  std::string got;
  size_t sent = 0;
  // Read and echo here until kHere bytes went back into the stack (the
  // rest stays unread there).
  EXPECT_TRUE(pump_until([&] {
    if (!c && tcp_->accept(l, &c, &peer) != 0) return false;
    uint8_t buf[4096];
    if (got.size() < kHere)
      if (const ssize_t n = tcp_->recv(c, {buf, std::min(sizeof buf, kHere - got.size())}); n > 0)
        got.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
    while (sent < got.size()) {
      const ssize_t m =
          tcp_->send(c, {reinterpret_cast<const uint8_t*>(got.data()) + sent, got.size() - sent});
      if (m <= 0) break;
      sent += static_cast<size_t>(m);
    }
    return sent == kHere;
  }));
  ASSERT_EQ(sent, kHere);
  const FourTuple t = tcp_->tuple(c);
  size_t unread = 0, unacked = 0;
  const int handed = tcp_->hand_over(
      c,
      [&](const Handover& h) {
        unread = h.unread.size();
        unacked = h.sent.size() + h.unsent.size();
        const std::vector<uint8_t> bytes = ss::net::tcp::encode_handover(t, h);
        const uint64_t len = bytes.size();
        if (write(down[1], &len, sizeof len) != sizeof len) return -EIO;
        for (size_t off = 0; off < bytes.size();) {
          const ssize_t n = write(down[1], bytes.data() + off, bytes.size() - off);
          if (n <= 0) return -EIO;
          off += static_cast<size_t>(n);
        }
        return 0;
      },
      /*to_kernel=*/false);
  close(down[1]);
  EXPECT_EQ(handed, 0) << strerror(-handed);
  EXPECT_EQ(tcp_->recv(c, {}), -ENOTCONN);  // the handle here holds it no more
  EXPECT_TRUE(pump_until([&] { return client_done.load(); }));
  client.join();
  EXPECT_TRUE(echoed == msg) << "echoed " << echoed.size() << " of " << msg.size();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  reap.release();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::printf("handed over with %zu bytes unread and %zu sent or queued here\n", unread, unacked);
  tcp_->close(c);
  tcp_->close(l);
}

// stop_listening takes a listener off the rings under a thread that may
// still hold its handle: Linux's SYN then meets A's kernel, which has no
// listener (refused); the handle stays good (accept -EAGAIN, events 0, a
// waiter kicked) and a new listener takes the port at once. The old
// handle's close then leaves the new one's steering alone: a client
// connects to it.
TEST_F(TcpRing, AStoppedListenerLeavesTheRingsAndKeepsItsHandle) {
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  const int kick = tcp_->join_waiters(l);
  ASSERT_GE(kick, 0);
  tcp_->stop_listening(l);
  pollfd p{kick, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 1) << "the waiter was not kicked";
  tcp_->leave_waiters(l, true);
  auto connect_from_b = [&] {
    const int fd = ns_->socket_in_b(SOCK_STREAM);
    const timeval bound{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kOurPort);
    const int r = connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 ? 0 : errno;
    close(fd);
    return r;
  };
  std::atomic<int> err{-1};
  std::thread refused([&] { err = connect_from_b(); });
  pump_until([&] { return err >= 0; });
  refused.join();
  EXPECT_EQ(err.load(), ECONNREFUSED) << strerror(err);
  Socket* c = nullptr;
  EXPECT_EQ(tcp_->accept(l, &c, nullptr), -EAGAIN);
  EXPECT_EQ(tcp_->events(l), 0);
  Socket* again = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &again), 0);
  tcp_->close(l);
  err = -1;
  std::thread served([&] { err = connect_from_b(); });
  EXPECT_TRUE(pump_until([&] { return tcp_->accept(again, &c, nullptr) == 0; }));
  pump_until([&] { return err >= 0; });
  served.join();
  EXPECT_EQ(err.load(), 0) << strerror(err);
  if (c) tcp_->close(c, /*abort=*/true);
  tcp_->close(again);
}

// A listener stopped with keep_completed (a fork child took the port
// before the parent accepted what the rings had completed): those
// connections stay open on the rings, accept gives them out (events
// POLLIN until the last), data moves both ways; one still there when
// the listener closes is reset, as Linux's close resets what it queued.
// Fails (accept -EAGAIN, the clients reset) if the stop resets them.
TEST_F(TcpRing, AStoppedListenerKeepsWhatItCompletedForAccept) {
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  int clients[2];
  for (int& fd : clients) {
    fd = connect_from_b_pumping();
    ASSERT_GE(fd, 0) << "connect from b: " << strerror(-fd);
  }
  EXPECT_TRUE(pump_until([&] { return tcp_->listener_counters(l).handshakes == 2; }));

  tcp_->stop_listening(l, /*keep_completed=*/true);
  EXPECT_EQ(tcp_->events(l), POLLIN);
  Socket* kept = nullptr;
  ASSERT_EQ(tcp_->accept(l, &kept, nullptr), 0) << "the completed connections were not kept";
  EXPECT_EQ(tcp_->events(l), POLLIN) << "the second kept connection is not shown";
  const std::string a = pattern(6000, 5);
  ASSERT_EQ(write(clients[0], a.data(), a.size()), static_cast<ssize_t>(a.size()));
  EXPECT_TRUE(recv_all(kept, a.size()) == a) << "the kept connection garbled its bytes";
  send_all(kept, a);
  std::string got(a.size(), '\0');
  EXPECT_EQ(recv(clients[0], got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(a.size()));
  EXPECT_TRUE(got == a) << "the kept connection garbled its echo";

  tcp_->close(l);  // the second, never accepted: reset
  char c;
  EXPECT_EQ(recv(clients[1], &c, 1, 0), -1);
  EXPECT_EQ(errno, ECONNRESET) << strerror(errno);
  tcp_->close(kept, /*abort=*/true);
  for (const int fd : clients) close(fd);
  EXPECT_TRUE(pump_until([&] { return tcp_->connections() == 0; }));
}

// A poller of many handles (socketXtreme) learns which the stack changed:
// a watched handle is listed at once, then at each change (a handshake
// completed, data), once until taken; an unwatched or closed one never.
// A list that was empty calls on_first_ready (a poller asleep wakes),
// whoever fed the stack.
TEST_F(TcpRing, WatchedHandlesAreListedWhenTheStackChangesThem) {
  static const char kL = 'l', kC = 'c';
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  std::vector<const void*> ready;
  EXPECT_FALSE(tcp_->any_ready());
  tcp_->watch_ready(l, &kL);
  EXPECT_TRUE(tcp_->any_ready());
  EXPECT_EQ(first_ready_.load(), 1) << "an empty list took a handle without on_first_ready";
  tcp_->take_ready(&ready);
  EXPECT_EQ(ready, std::vector<const void*>{&kL}) << "not listed when watched";
  EXPECT_FALSE(tcp_->any_ready());
  ready.clear();
  tcp_->take_ready(&ready);
  EXPECT_TRUE(ready.empty()) << "listed again without a change";

  std::vector<const void*> seen;
  auto taken = [&](const void* tag) {
    tcp_->take_ready(&seen);
    return std::count(seen.begin(), seen.end(), tag);
  };
  const int fd = connect_from_b_pumping();
  ASSERT_GE(fd, 0) << "connect from b: " << strerror(-fd);
  EXPECT_TRUE(pump_until([&] { return first_ready_.load() == 2; }))
      << "a handshake did not call on_first_ready";
  EXPECT_TRUE(pump_until([&] { return taken(&kL) > 0; })) << "a handshake did not list it";
  Socket* c = nullptr;
  ASSERT_EQ(tcp_->accept(l, &c, nullptr), 0);
  tcp_->watch_ready(l, nullptr);
  tcp_->watch_ready(c, &kC);
  seen.clear();
  EXPECT_EQ(taken(&kC), 1);

  seen.clear();
  ASSERT_EQ(write(fd, "x", 1), 1);
  EXPECT_TRUE(pump_until([&] { return taken(&kC) > 0; })) << "data did not list it";
  EXPECT_EQ(std::count(seen.begin(), seen.end(), &kL), 0) << "an unwatched handle was listed";

  // Sends that fill the buffer list it too: a watcher of edges sees
  // POLLOUT fall, so its rise later is one.
  seen.clear();
  const std::string lots(1 << 16, 'z');
  const std::span<const uint8_t> chunk{reinterpret_cast<const uint8_t*>(lots.data()), lots.size()};
  ssize_t n = 1;
  for (int i = 0; i < 1024 && n > 0; i++) n = tcp_->send(c, chunk);
  ASSERT_EQ(n, -EAGAIN) << "the send buffer never filled";
  EXPECT_EQ(taken(&kC), 1) << "a send that left it unwritable did not list it";

  ASSERT_EQ(write(fd, "y", 1), 1);
  EXPECT_TRUE(pump_until([&] { return (tcp_->events(c) & POLLIN) != 0; }));
  tcp_->close(c, /*abort=*/true);  // listed, not taken: gone with the handle
  seen.clear();
  EXPECT_EQ(taken(&kC), 0) << "a closed handle was listed";
  close(fd);
  tcp_->close(l);
  EXPECT_TRUE(pump_until([&] { return tcp_->connections() == 0; }));
}

// At exit (close_at_exit) a stopped listener's kept, unaccepted
// connection is reset, as the kernel resets what a listener queued when
// the process ends; it does not end with a FIN as an accepted one would.
TEST_F(TcpRing, AtExitAStoppedListenersUnacceptedConnectionIsReset) {
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  resolve_neighbour(NetnsPair::kIpB);
  const int fd = connect_from_b_pumping();
  ASSERT_GE(fd, 0) << "connect from b: " << strerror(-fd);
  EXPECT_TRUE(pump_until([&] { return tcp_->listener_counters(l).handshakes == 1; }));
  tcp_->stop_listening(l, /*keep_completed=*/true);
  tcp_->close_at_exit();
  char c;
  EXPECT_EQ(recv(fd, &c, 1, 0), -1) << "the connection ended without a reset";
  EXPECT_EQ(errno, ECONNRESET) << strerror(errno);
  close(fd);
  tcp_->close(l);
}

// A listener stopped while a connection it gave out lives (a fork child
// took the port, the parent kept a connection): that connection stays on
// the rings, data both ways, while a new client's SYN reaches a's kernel
// listener on the port, which completes it; nothing is reset. A listener
// of ours cannot take the port back meanwhile (the kernel's connections
// would come to the rings); once the kept connection is gone it can.
// Fails (refused) if the port kept bringing every frame to the rings.
TEST_F(TcpRing, AStoppedListenersConnectionsStayWhileNewOnesReachTheKernel) {
  Socket* l = nullptr;
  int kernel_l = -1;
  ASSERT_NO_FATAL_FAILURE(listen_here_and_in_kernel(&l, &kernel_l));
  auto connected_from_b = [&] {
    const int fd = connect_from_b();
    if (fd < 0) ADD_FAILURE() << "connect from b: " << strerror(-fd);
    return fd < 0 ? -1 : fd;
  };
  std::atomic<int> first{-2};
  std::thread t1([&] { first = connected_from_b(); });
  Socket* kept = nullptr;
  EXPECT_TRUE(pump_until([&] { return tcp_->accept(l, &kept, nullptr) == 0; }));
  pump_until([&] { return first != -2; });
  t1.join();
  ASSERT_NE(kept, nullptr);
  ASSERT_GE(first.load(), 0);
  const uint64_t resets0 = tcp_->counters().no_socket, strays0 = tcp_->counters().stray_syns;

  tcp_->stop_listening(l);
  EXPECT_EQ(tcp_->counters().keep_failed, 0u);
  std::atomic<int> second{-2};
  std::thread t2([&] { second = connected_from_b(); });
  pollfd p{kernel_l, POLLIN, 0};
  pump_until([&] { return poll(&p, 1, 0) == 1; });
  const int served = accept4(kernel_l, nullptr, nullptr, SOCK_CLOEXEC);
  pump_until([&] { return second != -2; });
  t2.join();
  ASSERT_GE(served, 0) << "a's kernel listener got no connection";
  const timeval bound{10, 0};
  setsockopt(served, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  ASSERT_GE(second.load(), 0);
  // The kernel's connection carries data, and so does the one kept.
  const std::string a = pattern(5000, 3), b = pattern(7000, 4);
  ASSERT_EQ(write(second, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  std::string got(a.size(), '\0');
  EXPECT_EQ(recv(served, got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(a.size()));
  EXPECT_TRUE(got == a) << "the kernel connection garbled its bytes";
  ASSERT_EQ(write(first, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  EXPECT_TRUE(recv_all(kept, b.size()) == b) << "the kept connection garbled its bytes";
  send_all(kept, a);
  got.assign(a.size(), '\0');
  EXPECT_EQ(recv(first, got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(a.size()));
  EXPECT_TRUE(got == a) << "the kept connection garbled its echo";
  EXPECT_EQ(tcp_->counters().no_socket, resets0) << "our stack reset a frame of the port";
  EXPECT_EQ(tcp_->counters().stray_syns, strays0) << "a SYN after the switch reached the rings";
  Socket* again = nullptr;
  EXPECT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &again),
            -EADDRINUSE);
  // We close first: the kept connection waits in TIME-WAIT. A client
  // from its very port then reaches a's kernel listener (our TIME-WAIT
  // answers the SYN with an ACK, Linux's client resets it and retries).
  sockaddr_in from{};
  socklen_t from_len = sizeof from;
  getsockname(first, reinterpret_cast<sockaddr*>(&from), &from_len);
  tcp_->close(kept);
  char eof;
  EXPECT_TRUE(pump_until([&] { return read(first, &eof, 1) == 0; }));
  close(first);
  // b's end in LAST-ACK until ours acknowledged its FIN: ours in TIME-WAIT.
  const std::string last_ack =
      "ip netns exec " + ns_->name_b() +
      " ss -Htan state last-ack '( sport = :" + std::to_string(ntohs(from.sin_port)) + " )'";
  EXPECT_TRUE(pump_until([&] { return sstest::output(last_ack).empty(); }));
  std::atomic<int> reused{-2};
  std::thread t3([&] {
    const int fd = ns_->socket_in_b(SOCK_STREAM);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const timeval bound{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kOurPort);
    reused = bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) == 0 &&
                     connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0
                 ? 0
                 : errno;
    close(fd);
  });
  EXPECT_TRUE(pump_until([&] { return reused != -2; }));
  t3.join();
  EXPECT_EQ(reused.load(), 0) << strerror(reused);
  const int served2 = accept4(kernel_l, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_GE(served2, 0) << "a's kernel listener did not get the port's reuse";
  if (served2 >= 0) close(served2);
  tcp_->close(l);
  EXPECT_EQ(tcp_->connections(), 0u);
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &again), 0)
      << "the port stayed kept-only";
  tcp_->close(again);
  close(second);
  close(served);
  close(kernel_l);
}

// A SYN already on the rings when its listener leaves them (a fork
// child's first accept, a close) is dropped and counted, not reset: the
// client's retry reaches a's kernel listener, which serves it. Fails
// (refused) if our stack answered it with a reset.
TEST_F(TcpRing, ASynOnTheRingsWhenItsListenerLeavesIsServedByTheKernel) {
  Socket* l = nullptr;
  int kernel_l = -1;
  ASSERT_NO_FATAL_FAILURE(listen_here_and_in_kernel(&l, &kernel_l));
  const uint64_t resets0 = tcp_->counters().no_socket, strays0 = tcp_->counters().stray_syns;
  std::atomic<int> client{-2};
  std::thread t([&] { client = connect_from_b(); });
  // The SYN on the rings, not read yet; then the listener leaves.
  const auto end = std::chrono::steady_clock::now() + kWait;
  std::vector<pollfd> rx;
  for (auto& q : queues_) {
    short ev = 0;
    rx.push_back({q.queue->poll_fd(ss::prov::Ring::kRx, &ev), ev, 0});
  }
  while (poll(rx.data(), rx.size(), 10) == 0 && std::chrono::steady_clock::now() < end) {
  }
  tcp_->stop_listening(l);
  pollfd p{kernel_l, POLLIN, 0};
  EXPECT_TRUE(pump_until([&] { return poll(&p, 1, 0) == 1; })) << "a's kernel listener got no SYN";
  const int served = accept4(kernel_l, nullptr, nullptr, SOCK_CLOEXEC);
  pump_until([&] { return client != -2; });
  t.join();
  EXPECT_GE(served, 0) << "a's kernel listener got no connection";
  EXPECT_GE(client.load(), 0) << "the client: " << strerror(-client.load());
  EXPECT_EQ(tcp_->counters().no_socket, resets0) << "our stack reset the SYN";
  EXPECT_EQ(tcp_->counters().stray_syns, strays0 + 1) << "the SYN never reached the rings";
  for (const int fd : {served, client.load(), kernel_l})
    if (fd >= 0) close(fd);
  tcp_->close(l);
}

// A connection the rings passed to the kernel whose steering entry was
// lost (the oldest idle ones make room for newer): its frames come to the
// rings again, where a listener of ours holds the port. Its ACKs go back
// to the kernel, dropped here: Linux's retransmission reaches a's kernel
// socket, and the connection carries data both ways. The connection is
// made on the kernel before our listener steers the port, then passed as
// hand_over passes one; a lost entry is one no longer passing. Fails
// (b's connection reset) if our listener answers those ACKs.
TEST_F(TcpRing, APassedConnectionWhoseEntryIsLostGoesBackToTheKernel) {
  resolve_neighbour(NetnsPair::kIpB);
  const int kernel_l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // in a
  int one = 1;
  setsockopt(kernel_l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in any = sstest::inet("0.0.0.0", kOurPort);
  ASSERT_EQ(bind(kernel_l, reinterpret_cast<const sockaddr*>(&any), sizeof any), 0);
  ASSERT_EQ(listen(kernel_l, 4), 0);
  const int b = ns_->socket_in_b(SOCK_STREAM);
  const timeval bound{10, 0};
  setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kOurPort);
  ASSERT_EQ(connect(b, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0) << strerror(errno);
  const int a = accept4(kernel_l, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(a, 0);
  setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  Socket* l = nullptr;
  ASSERT_EQ(tcp_->listen(IpAddr::parse("0.0.0.0"), kOurPort, ListenerConfig{}, &l), 0);
  sockaddr_in from{};
  socklen_t from_len = sizeof from;
  getsockname(b, reinterpret_cast<sockaddr*>(&from), &from_len);
  ss::prov::FlowConnection pc;
  pc.family = AF_INET;
  inet_pton(AF_INET, NetnsPair::kIpA, pc.local);
  inet_pton(AF_INET, NetnsPair::kIpB, pc.remote);
  pc.local_port = kOurPort;
  pc.remote_port = ntohs(from.sin_port);
  ASSERT_EQ(steering_->pass(pc, true), 0);
  ASSERT_EQ(steering_->pass(pc, false), 0);  // lost: its frames come to the rings

  const std::string there = pattern(3000, 5), back = pattern(2000, 6);
  ASSERT_EQ(write(b, there.data(), there.size()), static_cast<ssize_t>(there.size()));
  std::string got(there.size(), '\0');
  std::atomic<ssize_t> n{-2};
  std::thread reader([&] { n = recv(a, got.data(), got.size(), MSG_WAITALL); });
  EXPECT_TRUE(pump_until([&] { return n != -2; }));
  reader.join();
  EXPECT_EQ(n.load(), static_cast<ssize_t>(there.size())) << strerror(errno);
  EXPECT_TRUE(got == there) << "a's kernel socket garbled b's bytes";
  EXPECT_GE(tcp_->counters().stray_to_kernel, 1u) << "no ACK of b's reached the rings";
  ASSERT_EQ(write(a, back.data(), back.size()), static_cast<ssize_t>(back.size()));
  got.assign(back.size(), '\0');
  EXPECT_EQ(recv(b, got.data(), got.size(), MSG_WAITALL), static_cast<ssize_t>(back.size()))
      << strerror(errno);
  EXPECT_TRUE(got == back) << "b's socket garbled a's bytes";
  tcp_->close(l);
  close(a);
  close(b);
  close(kernel_l);
}

// The program's exit (close_at_exit): both connections it still holds
// close as close() would, their handles kept (a send: EPIPE). Linux's end
// reads each to the end of stream, then closes the first (ours goes to
// TIME-WAIT) and keeps the second open: that one is what awaiting_peer
// counts, and reset_awaiting_peer resets it (Linux's socket sees the
// error). None of it reaches a's kernel.
TEST_F(TcpRing, AtExitConnectionsCloseAndTheLateAreReset) {
  const int lfd = linux_listener(NetnsPair::kIpB);
  ASSERT_GE(lfd, 0);
  constexpr size_t kBytes = 100 << 10;
  std::atomic<int> ended{0};
  std::atomic<size_t> got[2] = {0, 0};
  short late_events = 0;
  std::thread linux_end([&] {
    int c[2] = {-1, -1};
    for (int& fd : c) fd = accept(lfd, nullptr, nullptr);
    char buf[65536];
    ssize_t n;
    for (int i = 0; i < 2; i++) {
      if (c[i] < 0) continue;
      const timeval bound{10, 0};
      setsockopt(c[i], SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
      while ((n = linux_read(c[i], buf, sizeof buf)) > 0) got[i] += static_cast<size_t>(n);
      if (n == 0) ended++;
    }
    if (c[0] >= 0) close(c[0]);
    if (c[1] < 0) return;
    pollfd p{c[1], 0, 0};  // POLLERR and POLLHUP come unasked: the reset
    if (poll(&p, 1, 10'000) > 0) late_events = p.revents;
    close(c[1]);
  });
  resolve_neighbour(NetnsPair::kIpB);
  Socket* s[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; i++) {
    FourTuple t;
    t.local = IpAddr::parse(NetnsPair::kIpA);
    t.remote = IpAddr::parse(NetnsPair::kIpB);
    t.local_port = static_cast<uint16_t>(kOurClientPort + i);
    t.remote_port = kLinuxPort;
    ToKernel why;
    ASSERT_EQ(tcp_->connect(t, ss::net::tcp::Config{}, &s[i], &why), 0);
    EXPECT_TRUE(pump_until([&] { return tcp_->state(s[i]) != State::kSynSent; }));
    ASSERT_EQ(tcp_->state(s[i]), State::kEstablished);
    send_all(s[i], pattern(kBytes, i));
  }
  tcp_->close_at_exit();
  const uint8_t x = 0;
  EXPECT_EQ(tcp_->send(s[0], {&x, 1}), -EPIPE);
  // Linux read both to their end (so has our FINs) and closed the first:
  // once its ACK and FIN are in, one connection still awaits its peer.
  EXPECT_TRUE(pump_until([&] {
    return ended == 2 && tcp_->state(s[0]) == State::kTimeWait &&
           tcp_->state(s[1]) == State::kFinWait2;
  })) << "ended "
      << ended.load() << ", states " << int(tcp_->state(s[0])) << " " << int(tcp_->state(s[1]));
  EXPECT_EQ(tcp_->awaiting_peer().closing, 1u);
  EXPECT_EQ(got[0].load(), kBytes);
  EXPECT_EQ(got[1].load(), kBytes);
  tcp_->reset_awaiting_peer();
  EXPECT_EQ(tcp_->awaiting_peer().closing, 0u);
  EXPECT_EQ(tcp_->state(s[1]), State::kClosed);
  linux_end.join();
  EXPECT_TRUE(late_events & POLLERR) << "Linux's end saw no reset: revents " << late_events;
  expect_no_kernel_socket(kOurClientPort);
  expect_no_kernel_socket(kOurClientPort + 1);
  for (Socket* h : s) tcp_->close(h);
  close(lfd);
}

// The exit's wait follows the peer's progress (awaiting_peer's moved):
// Linux's end, with a small receive buffer, first reads nothing (our
// data waits unacknowledged: nothing moves), then slowly: each window it
// frees is acknowledged data, a move, long before the connection ends.
TEST_F(TcpRing, AtExitTheWaitSeesThePeerTakeData) {
  const int lfd = linux_listener(NetnsPair::kIpB, 16 << 10);  // a small window
  ASSERT_GE(lfd, 0);
  std::atomic<bool> read_now{false};
  std::atomic<size_t> got{0};
  std::thread linux_end([&] {
    const int c = accept(lfd, nullptr, nullptr);
    if (c < 0) return;
    while (!read_now) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const timeval bound{10, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    char buf[4096];
    ssize_t n;
    while ((n = linux_read(c, buf, sizeof buf)) > 0) {
      got += static_cast<size_t>(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    close(c);
  });
  Socket* s = connect_to_linux(NetnsPair::kIpA, NetnsPair::kIpB);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(pump_until([&] { return tcp_->state(s) != State::kSynSent; }));
  ASSERT_EQ(tcp_->state(s), State::kEstablished);
  // As much as the send buffer takes while Linux's window fills.
  const size_t sent = send_for(s, pattern(1 << 20, 3), std::chrono::milliseconds(200));
  ASSERT_GT(sent, 64u << 10);
  tcp_->close_at_exit();
  for (int i = 0; i < 5; i++) pump();
  ss::net::tcp::Stack::ExitWait w = tcp_->awaiting_peer();
  for (int i = 0; i < 5; i++) pump();
  w = tcp_->awaiting_peer();
  EXPECT_EQ(w.closing, 1u);
  EXPECT_FALSE(w.moved) << "nothing was read, yet something moved";
  EXPECT_GE(w.longest_rto_us, 200'000u);
  read_now = true;
  int moves = 0;
  EXPECT_TRUE(pump_until([&] {
    w = tcp_->awaiting_peer();
    if (w.moved && w.closing > 0) moves++;
    return w.closing == 0;
  }));
  EXPECT_GE(moves, 2) << "the data's acknowledgements were not seen as moves";
  linux_end.join();
  EXPECT_EQ(got.load(), sent);
  tcp_->close(s);
  close(lfd);
}

// The exit's wait given up on a connection in LAST-ACK (Linux's end shut
// its writing, then took nothing of ours): Linux's end, which still
// awaits our data and FIN, gets a RST, as from Linux giving up an orphan.
TEST_F(TcpRing, AtExitGivingUpResetsAPeerStillWaiting) {
  const int lfd = linux_listener(NetnsPair::kIpB, 16 << 10);  // a small window
  ASSERT_GE(lfd, 0);
  std::atomic<bool> shut{false};
  short events = 0;
  std::thread linux_end([&] {
    const int c = accept(lfd, nullptr, nullptr);
    if (c < 0) return;
    shutdown(c, SHUT_WR);
    shut = true;
    pollfd p{c, 0, 0};  // POLLERR and POLLHUP come unasked: the reset
    if (poll(&p, 1, 10'000) > 0) events = p.revents;
    close(c);
  });
  Socket* s = connect_to_linux(NetnsPair::kIpA, NetnsPair::kIpB);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(pump_until([&] { return shut && tcp_->state(s) == State::kCloseWait; }));
  send_for(s, pattern(256 << 10, 4), std::chrono::milliseconds(100));
  tcp_->close_at_exit();
  EXPECT_EQ(tcp_->state(s), State::kLastAck);
  EXPECT_EQ(tcp_->awaiting_peer().closing, 1u);
  tcp_->reset_awaiting_peer();
  EXPECT_EQ(tcp_->state(s), State::kClosed);
  linux_end.join();
  EXPECT_TRUE(events & POLLERR) << "Linux's end saw no reset: revents " << events;
  tcp_->close(s);
  close(lfd);
}

}  // namespace

int main(int argc, char** argv) {
  return sstest::netns_test_main(argc, argv, "tcp_ring_tests", "sstcp");
}
