// TCP options (RFC 9293 §3.2): MSS, window scale (RFC 7323 §2), SACK
// permitted and SACK blocks (RFC 2018), timestamps (RFC 7323 §3). Parsed
// from a received segment (possibly hostile) and written for one we send.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace ss::net::tcp {

constexpr uint8_t kOptEnd = 0, kOptNop = 1, kOptMss = 2, kOptWscale = 3, kOptSackPermitted = 4,
                  kOptSack = 5, kOptTimestamps = 8;
constexpr uint8_t kMaxWscale = 14;  // RFC 7323 §2.3
constexpr size_t kMaxSackBlocks = 4;

struct SackBlock {
  uint32_t left = 0, right = 0;  // [left, right): bytes the peer holds
};

struct Options {
  bool has_mss = false;
  uint16_t mss = 0;
  bool has_wscale = false;
  uint8_t wscale = 0;
  bool sack_permitted = false;
  bool has_ts = false;
  uint32_t ts_val = 0, ts_ecr = 0;
  uint8_t sack_count = 0;
  SackBlock sack[kMaxSackBlocks];
};

// kOk; kIgnored: an option of a known kind with a wrong length, or one
// that belongs on a SYN (MSS, window scale, SACK permitted) on another
// segment, was left out, the others kept (Linux leaves them out so);
// kMalformed: an option length runs past the options or is below 2 (RFC
// 9293 MUST-7: such a segment must not crash us): what came before is
// kept, nothing after it is read.
enum class OptionsVerdict : uint8_t { kOk, kIgnored, kMalformed };

// Parses `opts` (the bytes between the fixed header and the data) of a
// segment with the SYN flag `syn` into *out (reset first). A window scale
// over 14 is taken as 14 (RFC 7323 §2.3).
OptionsVerdict parse_options(std::span<const uint8_t> opts, bool syn, Options* out);

// Writes o's options to out (room for kMaxOptionsLen bytes), NOP-padded
// to a multiple of 4, in the order Linux uses (MSS, SACK permitted with
// timestamps, window scale, then SACK blocks); returns the length. SACK
// blocks that do not fit (3 beside timestamps) are left out from the last:
// RFC 2018 puts the most recent first.
size_t write_options(const Options& o, uint8_t* out);

}  // namespace ss::net::tcp
