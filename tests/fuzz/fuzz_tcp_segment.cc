// Fuzz target: one received TCP segment (an IP payload: header, options,
// data) to core/net/tcp's parsers, as the stack's input will read it.
// libFuzzer's input is a heap buffer of exactly its size, so ASan sees any
// read past the segment. Properties: an accepted header's options and data
// lie inside the segment and add up to it; parsed options never hold more
// than four SACK blocks or a window scale over 14; options written from
// what was parsed parse to the same values; the checksum filled into a
// copy is then verified, for IPv4 and IPv6.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"

namespace {

using namespace ss::net::tcp;

bool same(const Options& a, const Options& b) {
  if (a.has_mss != b.has_mss || a.has_wscale != b.has_wscale ||
      a.sack_permitted != b.sack_permitted || a.has_ts != b.has_ts || a.sack_count != b.sack_count)
    return false;
  if ((a.has_mss && a.mss != b.mss) || (a.has_wscale && a.wscale != b.wscale)) return false;
  if (a.has_ts && (a.ts_val != b.ts_val || a.ts_ecr != b.ts_ecr)) return false;
  for (size_t i = 0; i < a.sack_count; i++)
    if (a.sack[i].left != b.sack[i].left || a.sack[i].right != b.sack[i].right) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> seg(data, size);
  Header h;
  std::span<const uint8_t> payload;
  if (parse_header(seg, &h, &payload) != HeaderVerdict::kOk) return 0;
  if (h.options.data() != data + kHeaderLen || payload.data() + payload.size() != data + size ||
      kHeaderLen + h.options.size() + payload.size() != size || h.options.size() > kMaxOptionsLen)
    abort();
  const bool syn = h.flags & kSyn;
  Options o;
  parse_options(h.options, syn, &o);
  if (o.sack_count > kMaxSackBlocks || o.wscale > kMaxWscale) abort();
  // What we would write from it reads back the same (SACK blocks past
  // what fits beside the others are left out: compare what was written).
  uint8_t buf[kMaxOptionsLen];
  const size_t n = write_options(o, buf);
  Options back;
  if (n % 4 || n > kMaxOptionsLen || parse_options({buf, n}, syn, &back) != OptionsVerdict::kOk)
    abort();
  Options trimmed = o;
  trimmed.sack_count = back.sack_count;
  if (back.sack_count > o.sack_count || !same(trimmed, back)) abort();
  // The checksum over a copy, both address families.
  std::vector<uint8_t> copy(data, data + size);
  const uint8_t a4[4] = {10, 0, 0, 1}, b4[4] = {10, 0, 0, 2};
  uint8_t a6[16] = {0xfd}, b6[16] = {0xfd, 1};
  fill_checksum(4, a4, b4, copy);
  if (!checksum_ok(4, a4, b4, copy)) abort();
  fill_checksum(6, a6, b6, copy);
  if (!checksum_ok(6, a6, b6, copy)) abort();
  return 0;
}
