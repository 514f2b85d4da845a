// Fuzz target: one core/net/tcp Connection fed hostile segments between
// the program's calls and the clock's steps, all chosen by the input.
// The first byte picks the options (window scale, timestamps, SACK,
// Nagle) and whether we connect or answer a SYN; then records: a segment
// (length byte, then the bytes as received: header, options, data; its
// data over linked frames when the record's top bit is set), a
// clock step (timers fire), a recv, or a send/shutdown/close/abort.
// Properties: no crash or sanitizer report; every segment we send parses
// cleanly and carries at most one MSS of data; the window we announce
// never exceeds the receive buffer by more than a scale unit.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "tests/core/tcp_room_sink.h"
#include "tests/fuzz/fuzz_pool.h"

namespace {

using namespace ss::net::tcp;

class CheckingSink : public RoomSink {
 public:
  uint32_t max_data = 0;
  void sent(std::span<const uint8_t> seg) override {
    Header h;
    std::span<const uint8_t> data;
    if (parse_header(seg, &h, &data) != HeaderVerdict::kOk) abort();
    Options o;
    if (parse_options(h.options, h.flags & kSyn, &o) != OptionsVerdict::kOk) abort();
    if (data.size() > max_data) abort();
  }
};

struct Input {
  const uint8_t* p;
  size_t n;
  bool take(uint8_t* b) {
    if (!n) return false;
    *b = *p++;
    n--;
    return true;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ss::mem::Pool* pool = fuzz_pool();
  Input in{data, size};
  uint8_t mode = 0;
  if (!in.take(&mode)) return 0;
  Config cfg;
  cfg.window_scaling = mode & 1;
  cfg.timestamps = mode & 2;
  cfg.sack = mode & 4;
  cfg.nodelay = mode & 8;
  cfg.rcv_buf = (mode & 32) ? 4096 : 131072;
  cfg.snd_buf = 65536;
  CheckingSink sink;
  sink.max_data = cfg.mss;
  TimerQueue timers;
  uint64_t now = 0;
  {
    Connection c(cfg, 80, 40000, &sink, &timers);
    bool opened = !(mode & 16);
    if (opened) c.connect(0, now);
    std::vector<uint8_t> buf(4096);
    for (uint8_t op; in.take(&op);) {
      uint8_t arg = 0;
      in.take(&arg);
      switch (op % 4) {
        case 0: {  // a segment of `arg` bytes
          const size_t len = std::min<size_t>(arg, in.n);
          ss::mem::Buffer frame = pool->get();
          if (!frame || frame.set_size(len) != 0) break;
          std::memcpy(frame.data(), in.p, len);
          in.p += len;
          in.n -= len;
          Header h;
          std::span<const uint8_t> payload;
          if (parse_header({static_cast<const uint8_t*>(frame.data()), len}, &h, &payload) !=
              HeaderVerdict::kOk) {
            break;
          }
          Options o;
          parse_options(h.options, h.flags & kSyn, &o);
          frame.pull_head(len - payload.size());
          if (op & 0x80) {  // the data over linked frames, as off a multi-buffer ring
            const size_t piece = 1 + ((op >> 2) & 0x1f), n = frame.size();
            const auto* d = static_cast<const uint8_t*>(frame.data());
            for (size_t at = piece; at < n; at += piece) {
              ss::mem::Buffer next = pool->get();
              const size_t k = std::min(piece, n - at);
              if (!next || next.set_size(k) != 0) break;
              std::memcpy(next.data(), d + at, k);
              if (frame.append(std::move(next)) != 0) abort();
            }
            if (n > piece) frame.set_size(piece);
          }
          if (!opened) {
            if ((h.flags & (kSyn | kAck | kRst)) != kSyn) break;
            opened = true;
            c.accept_syn(h, o, 1000, now);
          } else {
            c.input(h, o, std::move(frame), now);
          }
          break;
        }
        case 1: {  // the clock moves; due timers fire
          now += (op & 0x80) ? uint64_t{arg} * arg * 1000 : uint64_t{arg} * 997;
          while (timers.next_due() <= now) {
            if (auto* t = static_cast<ConnectionTimer*>(timers.pop_due(now))) {
              t->conn->on_timer(t, now);
            }
          }
          break;
        }
        case 2:
          c.recv({buf.data(), size_t{arg} * 16}, op & 0x80, now);
          break;
        default:
          switch ((op >> 2) & 3) {
            case 0:
              c.send({buf.data(), size_t{arg} * 16}, now);
              break;
            case 1:
              c.shutdown_write(now);
              break;
            case 2:
              c.close(now);
              break;
            default:
              c.abort(now);
              break;
          }
          break;
      }
      const uint32_t unit = 1u << kMaxWscale;
      if (c.rcv_wnd() > std::max<uint32_t>(cfg.rcv_buf, 0xffff) + unit) abort();
    }
  }
  if (timers.size() != 0) abort();  // the connection took its timers with it
  return 0;
}
