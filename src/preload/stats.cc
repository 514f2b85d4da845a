#include "preload/stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "librsocket/preload_hooks.h"
#include "interpose/real.h"
#include "preload/route.h"

extern char* program_invocation_short_name;

namespace ss::preload::stats {

namespace {

std::atomic<unsigned long> shm{0}, verbs{0}, tcp{0}, abandoned{0}, kernel{0};
std::mutex file_mu;

// The program's name as it started, copied when the library loads:
// programs that rewrite their argv for ps (nginx's "nginx: worker
// process", PostgreSQL's backends) change the string
// program_invocation_short_name points into.
struct ProgramName {
  char s[64];
  ProgramName() { snprintf(s, sizeof s, "%s", program_invocation_short_name); }
};
const ProgramName program_name;

void publish() {
  const int saved = errno;
  char dir[2048], path[4096], line[512];
  if (ss_rspreload_setting_str(SS_RSPRELOAD_STATS_DIR, dir, sizeof dir) <= 0) {
    errno = saved;
    return;
  }
  snprintf(path, sizeof path, "%s/rspreload.%d", dir, static_cast<int>(getpid()));
  // The counts read under the lock: a thread that counted later writes
  // later, so the file never ends on an older line.
  std::lock_guard<std::mutex> g(file_mu);
  const unsigned long s = shm, v = verbs, t = tcp;
  int n = snprintf(
      line, sizeof line,
      "pid=%d comm=%s rsockets=%lu shm=%lu verbs=%lu tcp=%lu abandoned=%lu kernel_tcp=%lu\n",
      static_cast<int>(getpid()), program_name.s, s + v + t, s, v, t, abandoned.load(),
      kernel.load());
  OwnCalls to_libc;  // the file's own calls are libc's
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!ss::interpose::real().write(fd, line, static_cast<size_t>(n));
    ss::interpose::real().close(fd);
  }
  errno = saved;
}

std::atomic<unsigned long>& counter_of(const char* provider) {
  if (provider && !strcmp(provider, "shm")) return shm;
  if (provider && !strcmp(provider, "verbs")) return verbs;
  return tcp;
}

}  // namespace

void count_rsocket(const char* provider) {
  counter_of(provider)++;
  publish();
}

void moved_to_kernel(const char* provider) {
  counter_of(provider)--;
  count_kernel();
}

void count_abandoned() {
  abandoned++;
  publish();
}

void count_kernel() {
  kernel++;
  publish();
}

}  // namespace ss::preload::stats
