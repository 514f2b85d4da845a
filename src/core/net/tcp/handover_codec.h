// A connection handed over to another process's TCP (a fork child
// carries on what its parent accepted): its 4-tuple and Handover as
// bytes, and back, every length and field checked on the way in (the
// bytes cross a process boundary). Both ends run the same library: the
// layout is this build's, behind a magic that names its version.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/base/api.h"
#include "core/net/tcp/handover.h"

namespace ss::net::tcp {

SS_API std::vector<uint8_t> encode_handover(const FourTuple& t, const Handover& h);
// 0, or -EINVAL for bytes encode_handover did not make: short or long, a
// length past the end, an unknown family, a window scale above 14.
SS_API int decode_handover(std::span<const uint8_t> bytes, FourTuple* t, Handover* h);

}  // namespace ss::net::tcp
