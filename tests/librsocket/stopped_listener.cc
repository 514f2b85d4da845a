#include "tests/librsocket/stopped_listener.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace rsconf {
namespace {

// The child: listens, reports "R<port>", then accepts and keeps every
// connection until it is killed.
void run_listening_child() {
  const char* prov = getenv("RS_CONFORMANCE_PROVIDER");
  const char* fam = getenv("RS_CONFORMANCE_FAMILY");
  if (!prov || !fam) child_fail("environment");
  select_provider(prov);
  int family = atoi(fam);
  int l = rsocket(family, SOCK_STREAM, 0);
  if (l < 0) child_fail("rsocket");
  Addr a = loopback(family);
  if (rbind(l, a.sa(), a.len) < 0 || rlisten(l, 16) < 0) child_fail("rbind/rlisten");
  a.len = sizeof a.ss;
  if (rgetsockname(l, a.sa(), &a.len) < 0) child_fail("rgetsockname");
  std::string r = "R" + std::to_string(a.port());
  if (write(kChildNotifyFd, r.data(), r.size()) != static_cast<ssize_t>(r.size())) _exit(3);
  for (;;) {
    if (raccept(l, nullptr, nullptr) < 0 && errno != EINTR) pause();
  }
}

struct ChildMode {
  ChildMode() {
    const char* mode = getenv("RS_CONFORMANCE_CHILD");
    if (mode && strcmp(mode, "stopped_listener") == 0) run_listening_child();
  }
} g_child_mode;

}  // namespace

bool StoppedListener::start(const char* provider, int family) {
  KFd notify;
  child_.pid = spawn_child("stopped_listener",
                           {std::string("RS_CONFORMANCE_PROVIDER=") + provider,
                            "RS_CONFORMANCE_FAMILY=" + std::to_string(family)},
                           &notify);
  EXPECT_GT(child_.pid, 0) << strerror(errno);
  if (child_.pid <= 0) return false;
  std::string report;
  EXPECT_TRUE(child_ready(notify, &report)) << "child: " << report;
  if (report.empty() || report[0] != 'R') return false;
  addr_ = loopback(family, static_cast<uint16_t>(atoi(report.c_str() + 1)));
  // Stopped before anyone connects: nothing it runs (its listen thread
  // included) answers from now on.
  int st = 0;
  EXPECT_EQ(0, kill(child_.pid, SIGSTOP));
  EXPECT_EQ(child_.pid, waitpid(child_.pid, &st, WUNTRACED));
  EXPECT_TRUE(WIFSTOPPED(st));
  return WIFSTOPPED(st);
}

void StoppedListener::resume() { kill(child_.pid, SIGCONT); }

}  // namespace rsconf
