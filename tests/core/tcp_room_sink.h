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
  std::span<uint8_t> header_room(size_t header_len, size_t data_len) override {
    room_.assign(header_len + data_len, 0);
    header_len_ = header_len;
    return {room_.data(), header_len};
  }
  void send_segment(const SegmentData& data) override {
    data.copy_to(room_.data() + header_len_);
    sent({room_.data(), header_len_ + data.len});
  }
  virtual void sent(std::span<const uint8_t>) {}

 private:
  std::vector<uint8_t> room_;
  size_t header_len_ = 0;
};

}  // namespace ss::net::tcp
