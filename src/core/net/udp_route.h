// The send path's answers from the kernel (NetlinkView): route, the
// interface's MAC and MTU, the next hop's MAC. What the rings of
// `ifindex` cannot carry is answered "use the kernel" with the reason.
// mtu_cap (VMA_MTU; 0: none) lowers the MTU the rings use below the
// route's: a larger datagram goes to the kernel, which fragments it.
#pragma once
#include <cstdint>
#include <memory>

#include "core/base/api.h"
#include "core/net/netlink_view.h"
#include "core/net/udp_tx.h"

namespace ss::net {

class NetlinkTxResolver final : public TxResolver {
 public:
  NetlinkTxResolver(NetlinkView* view, int ifindex, uint32_t mtu_cap = 0)
      : view_(view), ifindex_(ifindex), mtu_cap_(mtu_cap) {}
  int resolve(const Flow& f, TxPath* out, ToKernel* why) override;
  uint64_t generation() const override;

 private:
  NetlinkView* view_;
  int ifindex_;
  uint32_t mtu_cap_;
};

// A NetlinkTxResolver for a face outside libslipstream (the class's
// vtable stays inside).
SS_API std::unique_ptr<TxResolver> make_netlink_resolver(NetlinkView* view, int ifindex,
                                                         uint32_t mtu_cap = 0);

}  // namespace ss::net
