// A SegmentSink for tests: each segment is written into a room of its
// own and handed to sent() as the bytes the stack would put on the wire.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/net/tcp/connection.h"

namespace ss::net::tcp {

class RoomSink : public SegmentSink {
 public:
  std::span<uint8_t> segment_room(size_t len) override {
    room_.assign(len, 0);
    return room_;
  }
  void send_segment(size_t len) override { sent({room_.data(), len}); }
  virtual void sent(std::span<const uint8_t>) {}

 private:
  std::vector<uint8_t> room_;
};

}  // namespace ss::net::tcp
