// The C ABI edge: no r-function lets an exception out (here std::bad_alloc
// from a heap that is full comes out as -1 and ENOMEM); the calls that block
// are cancellation points, and pthread_cancel ends only the cancelled thread.
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/base/sanitizer.h"
#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

// Compile-time: a C++ caller sees every r-function that never blocks as
// noexcept, and every one that blocks as a cancellation point (no noexcept,
// as glibc declares the socket calls they stand for).
static_assert(
    noexcept(rsocket(0, 0, 0)) && noexcept(rbind(0, nullptr, 0)) && noexcept(rlisten(0, 0)) && noexcept(rshutdown(0, 0)) && noexcept(rgetpeername(0, nullptr, nullptr)) && noexcept(
        rgetsockname(
            0, nullptr,
            nullptr)) && noexcept(rsetsockopt(0, 0, 0, nullptr,
                                              0)) && noexcept(rgetsockopt(0, 0, 0, nullptr,
                                                                          nullptr)) && noexcept(rfcntl(0,
                                                                                                       0)) && noexcept(riomap(0,
                                                                                                                              nullptr,
                                                                                                                              0,
                                                                                                                              0,
                                                                                                                              0,
                                                                                                                              0)) && noexcept(riounmap(0,
                                                                                                                                                       nullptr,
                                                                                                                                                       0)));
static_assert(!noexcept(raccept(0, nullptr, nullptr)) && !noexcept(rconnect(0, nullptr, 0)) &&
              !noexcept(rclose(0)) && !noexcept(rrecv(0, nullptr, 0, 0)) &&
              !noexcept(rrecvfrom(0, nullptr, 0, 0, nullptr, nullptr)) &&
              !noexcept(rrecvmsg(0, nullptr, 0)) && !noexcept(rsend(0, nullptr, 0, 0)) &&
              !noexcept(rsendto(0, nullptr, 0, 0, nullptr, 0)) &&
              !noexcept(rsendmsg(0, nullptr, 0)) && !noexcept(rread(0, nullptr, 0)) &&
              !noexcept(rreadv(0, nullptr, 0)) && !noexcept(rwrite(0, nullptr, 0)) &&
              !noexcept(rwritev(0, nullptr, 0)) && !noexcept(rpoll(nullptr, 0, 0)) &&
              !noexcept(rselect(0, nullptr, nullptr, nullptr, nullptr)) &&
              !noexcept(riowrite(0, nullptr, 0, 0, 0)));

#if defined(SS_ASAN) || defined(SS_TSAN)
constexpr bool kSanitized = true;  // their allocators abort on exhaustion
#else
constexpr bool kSanitized = false;
#endif

void* volatile g_sink;  // the compiler may not drop mallocs whose result it keeps

// Fills the heap of this (forked, single-threaded) process up to an address
// space limit just above what it uses, so the next `new` throws.
void exhaust_heap() {
  long pages = 0;
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    if (fscanf(f, "%ld", &pages) != 1) pages = 0;
    fclose(f);
  }
  rlim_t cap = static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + (8u << 20);
  rlimit lim{cap, cap};
  if (pages == 0 || setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
  for (size_t size = 1u << 20; size >= 16; size /= 2)
    for (void* p = malloc(size); p; p = malloc(size)) g_sink = p;
}

TEST(CEdge, AllocationFailureInsideIsEnomem) {
  if (kSanitized) GTEST_SKIP() << "sanitizer allocators abort instead of failing";
  select_provider("tcp");
  int warm = rsocket(AF_INET, SOCK_STREAM, 0);  // the table and caches exist before
  ASSERT_GE(warm, 0) << strerror(errno);
  ASSERT_EQ(0, rclose(warm));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    exhaust_heap();
    errno = 0;
    int fd = rsocket(AF_INET, SOCK_STREAM, 0);  // make_shared<Socket> throws inside
    _exit(fd == -1 && errno == ENOMEM ? 0 : fd == -1 ? 1 : 2);
  }
  int status = 0;
  ASSERT_EQ(pid, waitpid(pid, &status, 0));
  ASSERT_TRUE(WIFEXITED(status)) << "rsocket let the exception out (signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(0, WEXITSTATUS(status)) << "1: -1 with another errno, 2: it succeeded, 3: no limit";
}

// pthread_cancel of a thread blocked in rrecv ends that thread, as it would
// in recv(2): the program lives on (noexcept there would std::terminate
// it), and the socket stays usable (the unwind released its lock and turn).
// In a child, so a terminate fails the test instead of the suite.
int cancel_blocked_rrecv_in_child(const char* provider) {
  select_provider(provider);
  Pair p;
  connect_pair(AF_INET, &p);
  if (p.client < 0 || p.server < 0) return 10;
  pthread_t reader;
  int server = p.server;
  auto body = [](void* arg) -> void* {
    char c;
    rrecv(*static_cast<int*>(arg), &c, 1, 0);  // nothing comes: blocks
    return nullptr;
  };
  if (pthread_create(&reader, nullptr, body, &server)) return 11;
  usleep(300 * 1000);  // into its sleep (past polling_time)
  if (pthread_cancel(reader)) return 12;
  void* res = nullptr;
  if (pthread_join(reader, &res) || res != PTHREAD_CANCELED) return 13;
  char c = 0;
  if (rsend(p.client, "x", 1, 0) != 1) return 14;
  if (rrecv(p.server, &c, 1, 0) != 1 || c != 'x') return 15;
  return 0;
}

void expect_cancel_ends_only_the_thread(const char* provider) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(cancel_blocked_rrecv_in_child(provider));
  int status = 0;
  ASSERT_EQ(pid, waitpid(pid, &status, 0));
  ASSERT_TRUE(WIFEXITED(status)) << "the cancellation killed the process (signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(0, WEXITSTATUS(status)) << "10: no pair, 11-13: thread not cancelled, "
                                       "14-15: the socket was unusable after";
}

TEST(CEdge, CancelThreadBlockedInRrecvShm) { expect_cancel_ends_only_the_thread("shm"); }
TEST(CEdge, CancelThreadBlockedInRrecvTcp) { expect_cancel_ends_only_the_thread("tcp"); }

}  // namespace
}  // namespace rsconf
