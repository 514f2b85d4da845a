// Fuzz target: the bytes one process hands another to carry a TCP
// connection on (core/net/tcp/handover_codec.h), as a hostile or broken
// sender would make them. decode_handover either refuses them or gives a
// Handover; a Connection then carries it on (Connection::restore) and
// the clock runs its timers.
// Properties: no crash or sanitizer report; every segment it sends
// parses cleanly and carries at most one MSS of data; what it lets the
// program read is exactly the handover's unread bytes, then nothing more
// (the end of stream where the peer's FIN came).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/handover_codec.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "tests/core/tcp_room_sink.h"
#include "tests/fuzz/fuzz_pool.h"

namespace {

using namespace ss::net::tcp;

class CheckingSink : public RoomSink {
 public:
  const Connection* conn = nullptr;
  void sent(std::span<const uint8_t> seg) override {
    Header h;
    std::span<const uint8_t> data;
    if (parse_header(seg, &h, &data) != HeaderVerdict::kOk) abort();
    Options o;
    if (parse_options(h.options, h.flags & kSyn, &o) != OptionsVerdict::kOk) abort();
    if (conn && data.size() > conn->send_mss_cap()) abort();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ss::mem::Pool* pool = fuzz_pool();
  FourTuple t;
  Handover h;
  if (decode_handover({data, size}, &t, &h) != 0) return 0;
  std::vector<ss::mem::Buffer> unread;
  for (size_t off = 0; off < h.unread.size();) {
    ss::mem::Buffer b = pool->get();
    const size_t n = std::min(b.capacity(), h.unread.size() - off);
    if (!b || b.set_size(n) != 0) return 0;  // more than the pool: the caller's -ENOBUFS
    std::memcpy(b.data(), h.unread.data() + off, n);
    unread.push_back(std::move(b));
    off += n;
  }
  CheckingSink sink;
  TimerQueue timers;
  uint64_t now = 1'000'000;
  {
    Connection c(Config{}, t.local_port, t.remote_port, &sink, &timers);
    sink.conn = &c;
    if (c.restore(h, std::move(unread), now) != 0) return 0;
    std::vector<uint8_t> got(h.unread.size() + 1);
    size_t at = 0;
    for (ssize_t n;
         at < got.size() && (n = c.recv({got.data() + at, got.size() - at}, false, now)) > 0;)
      at += static_cast<size_t>(n);
    if (at != h.unread.size() || std::memcmp(got.data(), h.unread.data(), at) != 0) abort();
    for (int step = 0; step < 64 && timers.next_due() != UINT64_MAX; step++) {
      now = std::max(now, timers.next_due());
      while (auto* timer = static_cast<ConnectionTimer*>(timers.pop_due(now)))
        timer->conn->on_timer(timer, now);
    }
    c.close(now);
  }
  return 0;
}
