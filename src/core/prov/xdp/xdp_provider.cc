// The xdp ring provider's registration: AF_XDP sockets on a netdev's rx
// queues, fed by our steering program.
#include "core/prov/registry.h"
#include "core/prov/ring.h"
#include "core/prov/xdp/xdp_queue.h"

namespace ss::prov::xdp {

namespace {

constexpr RingOps kOps{.create = XdpQueue::create};
constexpr Descriptor kDescriptor{"xdp", Family::kRing, nullptr, &kOps};
const Registration registration(kDescriptor);

}  // namespace

}  // namespace ss::prov::xdp
