// StreamEndpoint's part of a connection handed from one fork sibling to
// another (connection.h, save_handover). Only a quiet stream is handed
// over: established, no send queued, no completion waiting, not inside a
// frame's payload, no progress thread. What is left then is the stream's
// counters and the bytes of a frame header not yet whole.
#include <algorithm>
#include <cstring>

#include "core/base/pod_bytes.h"
#include "core/prov/util/stream_endpoint.h"

namespace ss::prov::util {

namespace {
struct StreamState {
  int error;
  bool sends_lost, rx_expect_large;
  uint64_t rx_frames, tx_frames;
  uint32_t staged;  // bytes of rx staging that follow
};
}  // namespace

bool StreamEndpoint::save_handover(std::vector<uint8_t>* out) const {
  if (cm_ != Cm::kEstablished || !sendq_.empty() || !cq_.empty() || rx_in_payload_ ||
      async_.joinable())
    return false;
  const StreamState st{error_,     sends_lost_, rx_expect_large_,
                       rx_frames_, tx_frames_,  static_cast<uint32_t>(rx_end_ - rx_begin_)};
  put_pod(out, st);
  out->insert(out->end(), rx_buf_.get() + rx_begin_, rx_buf_.get() + rx_end_);
  return save_more(out);
}

bool StreamEndpoint::load_handover(const uint8_t* in, size_t len) {
  PodReader r(in, len);
  StreamState st{};
  if (!r.get(&st) || st.staged > rx_size_) return false;
  const uint8_t* staged = r.take(st.staged);
  if (!staged) return false;
  size_t more = 0;
  const uint8_t* rest = r.rest(&more);
  Guard lock(*this);
  if (!sendq_.empty() || async_.joinable()) return false;  // this copy's own work
  memcpy(rx_buf_.get(), staged, st.staged);
  rx_begin_ = 0;
  rx_end_ = st.staged;
  rx_in_payload_ = false;
  rx_dst_ = nullptr;
  rx_done_ = 0;
  error_ = st.error;
  sends_lost_ = st.sends_lost;
  rx_expect_large_ = st.rx_expect_large;
  rx_frames_ = st.rx_frames;
  tx_frames_ = st.tx_frames;
  cq_.clear();
  cm_ = Cm::kEstablished;
  cm_reported_ = true;  // the engine took the connection in the process that left it
  return load_more(rest, more);
}

int StreamEndpoint::reserve_keys(uint32_t key) {
  RegionTable::reserve_keys(key);
  return 0;
}

int StreamEndpoint::alias_mr(const MemoryRegion& now, uint32_t wire_key, uint64_t wire_addr,
                             size_t len) {
  regions_.alias(now, wire_key, wire_addr, len);
  return 0;
}

}  // namespace ss::prov::util
