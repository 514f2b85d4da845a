// Fuzz target: one received frame as a ring hands it over, to core/net's
// parse_frame (Ethernet II, IPv4/IPv6, UDP). libFuzzer's input is a heap
// buffer of exactly its size, so ASan sees any read past the frame.
// Properties: the reason is one of the enum's, an accepted payload lies
// inside the frame, and an accepted frame rebuilt from its parsed view with
// the same payload (build_frame) parses to the same view; the rebuilt
// frame fits an MTU of exactly its IP length and no less. The input also
// checks the incremental checksum: summed in two spans split where its
// first byte says, it equals the one-span sum.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/net/checksum.h"
#include "core/net/ethernet.h"
#include "core/net/frame_build.h"
#include "core/net/frame_parse.h"

namespace {

using namespace ss::net;

void check_split_sum(const uint8_t* data, size_t size) {
  if (!size) return;
  const size_t cut = data[0] % (size + 1);
  Checksum whole, parts;
  whole.add(data, size);
  parts.add(data, cut);
  parts.add(data + cut, size - cut);
  if (whole.sum() != parts.sum()) abort();
}

void check_rebuild(const ParsedFrame& p) {
  const size_t hlen = frame_header_len(p.fields.ip_version);
  const size_t n = p.payload.size();
  std::vector<uint8_t> buf(hlen + n);
  memcpy(buf.data() + hlen, p.payload.data(), n);
  const size_t ip_len = hlen - kEthHeaderLen + n;  // IP header, UDP header, payload
  if (build_frame(buf, p.fields, n, ip_len - 1) != -EMSGSIZE) abort();
  if (build_frame(buf, p.fields, n, ip_len) != static_cast<ssize_t>(buf.size())) abort();
  ParsedFrame q;
  if (parse_frame(buf, &q) != FrameReason::kAccepted) abort();
  if (!(q.fields == p.fields) || q.payload.size() != n ||
      memcmp(q.payload.data(), p.payload.data(), n) != 0)
    abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_split_sum(data, size);
  ParsedFrame p;
  const FrameReason r = parse_frame(std::span<const uint8_t>(data, size), &p);
  if (static_cast<size_t>(r) >= kFrameReasonCount || !frame_reason_name(r)) abort();
  if (frame_verdict(r) != FrameVerdict::kAccept) return 0;
  if (p.payload.data() < data || p.payload.data() + p.payload.size() > data + size) abort();
  check_rebuild(p);
  return 0;
}
