#include "core/net/tcp/options.h"

#include "core/net/byte_order.h"
#include "core/net/tcp/header.h"

namespace ss::net::tcp {

OptionsVerdict parse_options(std::span<const uint8_t> opts, bool syn, Options* out) {
  *out = Options{};
  OptionsVerdict verdict = OptionsVerdict::kOk;
  size_t i = 0;
  while (i < opts.size()) {
    const uint8_t kind = opts[i];
    if (kind == kOptEnd) break;
    if (kind == kOptNop) {
      i++;
      continue;
    }
    if (i + 1 >= opts.size()) return OptionsVerdict::kMalformed;
    const size_t len = opts[i + 1];
    if (len < 2 || i + len > opts.size()) return OptionsVerdict::kMalformed;
    const uint8_t* v = opts.data() + i + 2;
    bool used = true;
    switch (kind) {
      case kOptMss:
        used = syn && len == 4;
        if (used) {
          out->has_mss = true;
          out->mss = load_be16(v);
        }
        break;
      case kOptWscale:
        used = syn && len == 3;
        if (used) {
          out->has_wscale = true;
          out->wscale = v[0] > kMaxWscale ? kMaxWscale : v[0];
        }
        break;
      case kOptSackPermitted:
        used = syn && len == 2;
        out->sack_permitted = out->sack_permitted || used;
        break;
      case kOptSack:
        used = !syn && len >= 10 && (len - 2) % 8 == 0;
        if (used) {
          out->sack_count = 0;
          for (size_t b = 0; b < (len - 2) / 8 && b < kMaxSackBlocks; b++) {
            out->sack[b] = {load_be32(v + 8 * b), load_be32(v + 8 * b + 4)};
            out->sack_count++;
          }
        }
        break;
      case kOptTimestamps:
        used = len == 10;
        if (used) {
          out->has_ts = true;
          out->ts_val = load_be32(v);
          out->ts_ecr = load_be32(v + 4);
        }
        break;
      default:  // a kind we do not know: skipped by its length
        break;
    }
    if (!used) verdict = OptionsVerdict::kIgnored;
    i += len;
  }
  return verdict;
}

size_t write_options(const Options& o, uint8_t* out) {
  size_t n = 0;
  auto nop = [&] { out[n++] = kOptNop; };
  if (o.has_mss) {
    out[n++] = kOptMss;
    out[n++] = 4;
    store_be16(out + n, o.mss);
    n += 2;
  }
  if (o.sack_permitted && !o.has_ts) {
    nop();
    nop();
  }
  if (o.sack_permitted) {
    out[n++] = kOptSackPermitted;
    out[n++] = 2;
  }
  if (o.has_ts) {
    if (!o.sack_permitted) {
      nop();
      nop();
    }
    out[n++] = kOptTimestamps;
    out[n++] = 10;
    store_be32(out + n, o.ts_val);
    store_be32(out + n + 4, o.ts_ecr);
    n += 8;
  }
  if (o.has_wscale) {
    nop();
    out[n++] = kOptWscale;
    out[n++] = 3;
    out[n++] = o.wscale;
  }
  size_t blocks = o.sack_count;
  if (blocks > kMaxSackBlocks) blocks = kMaxSackBlocks;
  while (blocks && n + 4 + 8 * blocks > kMaxOptionsLen) blocks--;
  if (blocks) {
    nop();
    nop();
    out[n++] = kOptSack;
    out[n++] = static_cast<uint8_t>(2 + 8 * blocks);
    for (size_t b = 0; b < blocks; b++) {
      store_be32(out + n, o.sack[b].left);
      store_be32(out + n + 4, o.sack[b].right);
      n += 8;
    }
  }
  return n;
}

}  // namespace ss::net::tcp
