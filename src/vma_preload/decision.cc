#include "vma_preload/decision.h"

#include <pthread.h>

#include <mutex>
#include <set>

#include "core/base/log.h"
#include "libvmacompat/conf_file.h"
#include "libvmacompat/settings.h"

namespace ss::vma::preload {
namespace {

// Threads whose sockets go against VMA_OFFLOADED_SOCKETS (libvma keeps the
// same: a thread is listed only while it differs). Never destroyed: a
// socket opened by a late destructor still asks.
constinit std::mutex g_mu;
std::set<pthread_t>* g_flipped = nullptr;  // guarded by g_mu

bool default_offloaded() { return settings::get(settings::Id::kOffloadedSockets) != 0; }

// Held across fork, so a child never inherits it locked by a thread of
// the parent that does not exist there (its first socket() would wait).
[[maybe_unused]] const int g_atfork =
    pthread_atfork([] { g_mu.lock(); }, [] { g_mu.unlock(); }, [] { g_mu.unlock(); });

}  // namespace

Decision decide_socket(int protocol) {
  bool offloaded = default_offloaded();
  bool flipped;
  {
    std::lock_guard lock(g_mu);
    flipped = g_flipped && g_flipped->count(pthread_self());
  }
  if (flipped) offloaded = !offloaded;
  if (!offloaded)
    return {Transport::kOs,
            flipped ? "thread_offload(0) for this thread" : "VMA_OFFLOADED_SOCKETS=0"};
  if (conf_socket_transport(protocol) == Transport::kOs)
    return {Transport::kOs, protocol == IPPROTO_TCP
                                ? "libvma.conf rule: use os for tcp_server and tcp_client"
                                : "libvma.conf rule: use os for udp_receiver and udp_sender"};
  if (protocol == IPPROTO_TCP)
    return {Transport::kVma, settings::get(settings::Id::kTcpOffload)
                                 ? "until connect or listen; then rings where its netdev has them"
                                 : "TCP offload is off (SLIPSTREAM_VMA_TCP=0)"};
  return {Transport::kVma, "until bound; then rings where its netdev has them"};
}

Decision decide_udp_bind(const sockaddr* local, socklen_t len) {
  if (conf_transport(Role::kUdpReceiver, local, len, nullptr, 0) == Transport::kOs)
    return {Transport::kOs, "libvma.conf rule: use os udp_receiver for its address"};
  return {Transport::kVma, "rings where its netdev has them"};
}

Decision decide_tcp_connect(const sockaddr* local, socklen_t local_len, const sockaddr* remote,
                            socklen_t remote_len) {
  if (conf_transport(Role::kTcpClient, local, local_len, remote, remote_len) == Transport::kOs)
    return {Transport::kOs, "libvma.conf rule: use os tcp_client for its peer"};
  return {Transport::kVma, "rings where its netdev has them"};
}

Decision decide_tcp_listen(const sockaddr* local, socklen_t len) {
  if (conf_transport(Role::kTcpServer, local, len, nullptr, 0) == Transport::kOs)
    return {Transport::kOs, "libvma.conf rule: use os tcp_server for its address"};
  return {Transport::kVma, "rings where its netdev has them"};
}

int thread_offload(int offload, pthread_t tid) {
  const bool want = offload != 0;
  SS_DEBUG("thread_offload: thread %lu: sockets it creates %s", static_cast<unsigned long>(tid),
           want ? "offloaded" : "on the kernel");
  std::lock_guard lock(g_mu);
  if (!g_flipped) g_flipped = new std::set<pthread_t>;
  if (want == default_offloaded())
    g_flipped->erase(tid);
  else
    g_flipped->insert(tid);
  return 0;
}

}  // namespace ss::vma::preload
