// The stack's way out for one connection: its path (route, MTU, MSS)
// and the sink that puts its segments behind Ethernet and IP headers.
#include <algorithm>
#include <cstring>

#include "core/net/ethernet.h"
#include "core/net/frame_build.h"
#include "core/net/ipv4.h"
#include "core/net/ipv6.h"
#include "core/net/tcp/stack_parts.h"

namespace ss::net::tcp {

using mem::Buffer;

namespace {

uint8_t version_of(const IpAddr& a) { return a.family == AF_INET ? 4 : 6; }

// The data a segment carries at most on a path of mtu, or in a frame of
// frame bytes (0, or too small to hold the headers: no bound from it).
uint16_t segment_bound(uint8_t version, size_t mtu, size_t frame) {
  const size_t ip_hlen = ip_frame_header_len(version) - kEthHeaderLen;
  const size_t head = kEthHeaderLen + ip_hlen + kHeaderLen;
  size_t n = 0xffff;
  if (mtu > ip_hlen + kHeaderLen) n = std::min(n, mtu - ip_hlen - kHeaderLen);
  if (frame > head) n = std::min(n, frame - head);
  return static_cast<uint16_t>(n);
}

}  // namespace

// and IP headers, in a frame of the netdev's FrameTx or into the stack's
// GsoBatch. The sink is the connection's base, so it is made first and
// goes last.
class PathSink : public SegmentSink {
 public:
  PathSink(Stack::Outlet* out, const FourTuple& t, const TxPath& path) : out_(out) {
    f_.ip_version = version_of(t.remote);
    memcpy(f_.dst_ip, t.remote.bytes, t.remote.size());
    mtu_ = path.mtu;
    repath(path);
  }
  // A new way out: its addresses. The MTU stays the one the connection's
  // MSS was taken from (a smaller one would refuse its segments).
  void repath(const TxPath& path) {
    memcpy(f_.src_mac, path.src_mac, 6);
    memcpy(f_.dst_mac, path.dst_mac, 6);
    memcpy(f_.src_ip, path.src.bytes, path.src.size());
  }
  std::span<uint8_t> header_room(size_t header_len, size_t data_len) override {
    if (header_len > kMaxHeaderLen) return {};
    header_len_ = header_len;
    if (out_->packets) return {header_, header_len};
    frame_ = out_->frames->take();
    const size_t head = ip_frame_header_len(f_.ip_version);
    if (!frame_ || head + header_len + data_len > frame_.capacity()) {
      out_->ctr->no_frame++;
      frame_ = Buffer();
      return {};
    }
    return {static_cast<uint8_t*>(frame_.data()) + head, header_len};
  }
  void send_segment(const SegmentData& data) override {
    if (f_.ip_version == 4) f_.ip_id = ip_id_.next();
    if (out_->packets) {
      int err = out_->batch->add(this, f_, mtu_, {header_, header_len_}, data);
      if (err == -ENOBUFS) {
        out_->send_batch();
        err = out_->batch->add(this, f_, mtu_, {header_, header_len_}, data);
      }
      if (err < 0) out_->ctr->tx_errors++;
      return;
    }
    auto* p = static_cast<uint8_t*>(frame_.data());
    const size_t head = ip_frame_header_len(f_.ip_version);
    const size_t len = header_len_ + data.len;
    data.copy_to(p + head + header_len_);
    fill_checksum(f_.ip_version, f_.src_ip, f_.dst_ip, {p + head, len});
    const ssize_t n = build_ip_frame({p, frame_.capacity()}, f_, kIpProtoTcp, len, mtu_);
    if (n < 0 || frame_.set_size(static_cast<size_t>(n)) != 0 ||
        out_->frames->queue(std::move(frame_)) < 0) {
      out_->ctr->tx_errors++;  // lost as on the wire: the connection sends it again
    } else {
      out_->ctr->frames_out++;
    }
    frame_ = Buffer();
  }
  // The batch gathers data from the send queues: out before they change.
  void release_data() override { out_->send_batch(); }

 private:
  Stack::Outlet* out_;
  size_t mtu_ = 0;
  FrameFields f_;
  Ipv4IdSequence ip_id_;
  Buffer frame_;  // between header_room and send_segment, on the rings
  uint8_t header_[kMaxHeaderLen];
  size_t header_len_ = 0;
};

class Stack::RingConnection final : private PathSink, public Connection {
 public:
  RingConnection(Stack* st, const FourTuple& t, const TxPath& path, const tcp::Config& cfg)
      : PathSink(st->out_.get(), t, path),
        Connection(cfg, t.local_port, t.remote_port, this, &st->timers_),
        st_(st),
        t_(t),
        path_gen_(st->cfg_.resolver->generation()) {}

  // A route changed since the path was taken: asked again. None now (the
  // route removed): nothing leaves, as from Linux's TCP, and the
  // connection's timers send it again, until the route is back.
  std::span<uint8_t> header_room(size_t header_len, size_t data_len) override {
    if (const uint64_t gen = st_->cfg_.resolver->generation(); gen != path_gen_) {
      TxPath path;
      ToKernel why;
      if (st_->resolve(t_, &path, &why) != 0) {
        st_->ctr_.path_lost++;
        return {};
      }
      repath(path);
      path_gen_ = gen;
    }
    return PathSink::header_room(header_len, data_len);
  }

 private:
  Stack* st_;
  FourTuple t_;
  uint64_t path_gen_;
};

int Stack::resolve(const FourTuple& t, TxPath* path, ToKernel* why) {
  Flow f;
  f.dst = t.remote;
  if (!all_zero(t.local)) f.src = t.local;
  f.sport = t.local_port;
  f.dport = t.remote_port;
  return cfg_.resolver->resolve(f, path, why);
}

std::unique_ptr<Connection> Stack::make_connection_locked(const FourTuple& t,
                                                          const tcp::Config& cfg) {
  TxPath path;
  ToKernel why;
  if (resolve(t, &path, &why) != 0) {
    ctr_.path_lost++;
    return nullptr;
  }
  tcp::Config c = cfg;
  // The program's bound (VMA_MSS), the path's MTU, and for what we
  // announce the frames we receive in; a packet socket sends the MTU's.
  const uint16_t path_mss = segment_bound(version_of(t.remote), path.mtu, 0);
  c.mss = std::min({c.mss, path_mss, segment_bound(version_of(t.remote), 0, cfg_.rx_frame_max)});
  if (cfg_.packets) c.tx_mss = std::min(cfg.mss, path_mss);
  if (version_of(t.remote) == 6) c.default_peer_mss = std::min<uint16_t>(c.default_peer_mss, 1220);
  return std::make_unique<RingConnection>(this, t, path, c);
}

void Stack::send_stateless_locked(const FourTuple& t, const Header& h, const Options& o) {
  TxPath path;
  ToKernel why;
  if (resolve(t, &path, &why) != 0) return;
  PathSink sink(out_.get(), t, path);
  Options mine = o;  // a cookie's SYN-ACK: the MSS as make_connection_locked's
  if (mine.has_mss)
    mine.mss = std::min({mine.mss, segment_bound(version_of(t.remote), path.mtu, 0),
                         segment_bound(version_of(t.remote), 0, cfg_.rx_frame_max)});
  uint8_t opts[kMaxOptionsLen];
  const size_t opts_len = write_options(mine, opts);
  const std::span<uint8_t> room = sink.header_room(kHeaderLen + opts_len, 0);
  if (room.empty()) return;
  write_header(room.data(), h, opts_len);
  memcpy(room.data() + kHeaderLen, opts, opts_len);
  sink.send_segment({});
}

}  // namespace ss::net::tcp
