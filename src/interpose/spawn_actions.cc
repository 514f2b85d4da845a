#include "interpose/spawn_actions.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "interpose/export.h"
#include "interpose/real.h"

namespace ss::interpose {
namespace {

// Few file-action objects live at once (one per spawn being set up).
struct Noted {
  const posix_spawn_file_actions_t* fa;
  std::vector<SpawnDup> dups;
};
std::mutex g_mu;
std::vector<Noted>* g_noted;  // made at first use, never freed (used until exit)

void forget(const posix_spawn_file_actions_t* fa) {
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_noted) return;
  g_noted->erase(
      std::remove_if(g_noted->begin(), g_noted->end(), [fa](const Noted& n) { return n.fa == fa; }),
      g_noted->end());
}

void note(const posix_spawn_file_actions_t* fa, SpawnDup d) {
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_noted) g_noted = new std::vector<Noted>;
  auto it =
      std::find_if(g_noted->begin(), g_noted->end(), [fa](const Noted& n) { return n.fa == fa; });
  if (it == g_noted->end()) it = g_noted->insert(it, Noted{fa, {}});
  it->dups.push_back(d);
}

}  // namespace

std::vector<SpawnDup> spawn_dup2_actions(const posix_spawn_file_actions_t* fa) {
  std::lock_guard<std::mutex> g(g_mu);
  if (fa && g_noted)
    for (const Noted& n : *g_noted)
      if (n.fa == fa) return n.dups;
  return {};
}

}  // namespace ss::interpose

using ss::interpose::real;

SS_PRELOAD_EXPORT int posix_spawn_file_actions_init(posix_spawn_file_actions_t* fa) {
  ss::interpose::forget(fa);  // the memory of one destroyed, or never made
  return real().posix_spawn_file_actions_init(fa);
}

SS_PRELOAD_EXPORT int posix_spawn_file_actions_destroy(posix_spawn_file_actions_t* fa) {
  ss::interpose::forget(fa);
  return real().posix_spawn_file_actions_destroy(fa);
}

SS_PRELOAD_EXPORT int posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t* fa, int fd,
                                                       int newfd) {
  const int rc = real().posix_spawn_file_actions_adddup2(fa, fd, newfd);
  if (rc == 0) ss::interpose::note(fa, {fd, newfd});
  return rc;
}
