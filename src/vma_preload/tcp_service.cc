#include "vma_preload/tcp_service.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <mutex>
#include <vector>

#include "core/base/deadline.h"
#include "core/base/log.h"
#include "core/base/service_thread.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/tcp_offload.h"

namespace ss::vma::preload {
namespace {

// The netdevs whose TCP stacks have had a connection: the service thread
// reads their rings and fires their timers. Never freed: the thread runs
// on through exit, past static destructors (as vma-netlink's view).
std::mutex g_mu;
std::vector<NetdevRings*>* g_netdevs_p = new std::vector<NetdevRings*>;  // g_mu
std::vector<NetdevRings*>& served() { return *g_netdevs_p; }
std::atomic<pid_t> g_serving_pid{0};  // tcp_serving_pid()

// tcp_retire's connections, with when they came; freed on the thread.
std::mutex g_retired_mu;
using Retired = std::pair<std::unique_ptr<TcpOffload>, std::chrono::steady_clock::time_point>;
std::vector<Retired>* g_retired_p = new std::vector<Retired>;  // g_retired_mu

std::atomic<size_t> g_retired_n{0};  // g_retired_p's size: the thread's loop looks without the lock

void free_retired() {
  if (g_retired_n.load(std::memory_order_relaxed) == 0) return;
  std::vector<Retired> gone;  // freed after the lock
  std::lock_guard lock(g_retired_mu);
  const auto now = std::chrono::steady_clock::now();
  const auto due = std::partition(g_retired_p->begin(), g_retired_p->end(), [&](const Retired& e) {
    return now - e.second < std::chrono::seconds(1) || e.first->in_calls();
  });
  std::move(due, g_retired_p->end(), std::back_inserter(gone));
  g_retired_p->erase(due, g_retired_p->end());
  g_retired_n.store(g_retired_p->size(), std::memory_order_relaxed);
}

// Whether a frame waits on one of r's rings.
bool rings_readable(NetdevRings* r) {
  std::vector<pollfd> fds;
  r->poll_fds(&fds);
  return ::poll(fds.data(), fds.size(), 0) > 0;
}

void serve(ServiceThread::Run& run) {
  std::vector<pollfd> fds;
  std::vector<uint64_t> seen;  // by netdev: the program's looks (RingTurn)
  std::vector<NetdevRings*> ours;
  std::vector<size_t> parked;  // netdevs' indices
  while (!run.stopping()) {
    const std::vector<NetdevRings*> netdevs = tcp_netdevs();
    seen.resize(netdevs.size(), UINT64_MAX);
    fds.assign(1, pollfd{-1, 0, 0});  // the thread's wake-up
    ours.clear();
    parked.clear();
    uint64_t due = UINT64_MAX, now = 0;
    int ms = -1;
    for (size_t i = 0; i < netdevs.size(); i++) {
      NetdevRings* r = netdevs[i];
      switch (r->turn.reader(&seen[i])) {
        case RingTurn::Reader::kService:
          r->poll_fds(&fds);
          ours.push_back(r);
          break;
        case RingTurn::Reader::kProgramLooks:
          ms = shorter_sleep_ms(ms, r->turn.look_again_ms());
          break;
        case RingTurn::Reader::kProgramSleeps:
          parked.push_back(i);
          ms = shorter_sleep_ms(ms, RingTurn::kParkedLookMs);
          break;
      }
      due = std::min(due, r->tcp->next_due());
      now = r->tcp->now();
      if (r->frames->holding()) ms = shorter_sleep_ms(ms, 1);  // a full tx ring: try again soon
    }
    ms = shorter_sleep_ms(ms, ms_until(due, now));
    // A program's call that arms a timer earlier than this sleep's end
    // wakes us (on_earlier_due); a later one waits for the next look.
    const uint64_t wake_at = ms < 0 ? due : std::min(due, now + uint64_t(ms) * 1000);
    for (NetdevRings* r : netdevs) r->tcp->watch_due(wake_at);
    run.poll(fds, ms);
    // A program asleep on a TCP socket's ring descriptor (socketXtreme)
    // learns of what this thread read through its eventfd.
    const auto read_rings = [](NetdevRings* r) {
      r->stack->poll_rx();
      if (r->xtreme_tcp_count.load(std::memory_order_acquire)) r->xtreme_kick();
    };
    for (NetdevRings* r : ours) read_rings(r);
    // Frames waiting while no sleeper looked: its sleep is not real (it
    // left without saying so); read them.
    for (const size_t i : parked)
      if (netdevs[i]->turn.looks() == seen[i] && rings_readable(netdevs[i])) read_rings(netdevs[i]);
    for (NetdevRings* r : netdevs) {
      r->tcp->run_timers();  // what they change kicks a socketXtreme sleeper (on_first_ready)
      r->frames->flush();
    }
    free_retired();
  }
}

ServiceThread& service() {
  static ServiceThread* t = new ServiceThread({"vma-tcp", /*child_keeps_users=*/false}, serve);
  return *t;
}

}  // namespace

void tcp_wake_service() { service().wake(); }

void tcp_retire(std::unique_ptr<TcpOffload> t) {
  if (!t) return;
  std::lock_guard lock(g_retired_mu);
  g_retired_p->emplace_back(std::move(t), std::chrono::steady_clock::now());
  g_retired_n.store(g_retired_p->size(), std::memory_order_relaxed);
}

std::vector<NetdevRings*> tcp_netdevs() {
  std::lock_guard lock(g_mu);
  return served();
}

pid_t tcp_serving_pid() { return g_serving_pid.load(std::memory_order_relaxed); }

void tcp_serve_netdev(NetdevRings* r) {
  bool added = false;
  {
    std::lock_guard lock(g_mu);
    if (std::find(served().begin(), served().end(), r) == served().end()) {
      served().push_back(r);
      g_serving_pid.store(getpid(), std::memory_order_relaxed);
      added = true;
    }
  }
  // One hold per netdev, for the process's life: its connections outlive
  // their descriptors (FIN, TIME-WAIT).
  if (added && service().hold() < 0)
    SS_WARN("%s: no vma-tcp thread; TCP connections move only while the program calls",
            r->ifname.c_str());
  service().wake();  // a new timer
}

void tcp_service_fork_child() {
  new (&g_mu) std::mutex;                       // a parent thread may have held it
  g_netdevs_p = new std::vector<NetdevRings*>;  // the parent's rings are not ours
  g_serving_pid.store(0, std::memory_order_relaxed);
}

}  // namespace ss::vma::preload
