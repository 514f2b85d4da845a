// The send path's answers from the kernel (NetlinkView): route, the
// interface's MAC and MTU, the next hop's MAC. What the rings of
// `ifindex` cannot carry is answered "use the kernel" with the reason.
#pragma once
#include <memory>

#include "core/base/api.h"
#include "core/net/netlink_view.h"
#include "core/net/udp_tx.h"

namespace ss::net {

class NetlinkTxResolver final : public TxResolver {
 public:
  NetlinkTxResolver(NetlinkView* view, int ifindex) : view_(view), ifindex_(ifindex) {}
  int resolve(const Flow& f, TxPath* out, ToKernel* why) override;

 private:
  NetlinkView* view_;
  int ifindex_;
};

// A NetlinkTxResolver for a face outside libslipstream (the class's
// vtable stays inside).
SS_API std::unique_ptr<TxResolver> make_netlink_resolver(NetlinkView* view, int ifindex);

}  // namespace ss::net
