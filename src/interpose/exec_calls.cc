#include "interpose/exec_calls.h"

#include <alloca.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>

#include "interpose/export.h"
#include "interpose/real.h"

namespace ss::interpose {
namespace {

std::atomic<void (*)()> g_hook{nullptr};

void before_exec() {
  if (void (*h)() = g_hook.load(std::memory_order_acquire)) h();
}

// execl's list: the hook, then exec with the arguments up to the null
// as argv, and the environment after the null (with_env: execle) or the
// process's. On the stack, no allocation: execl and execle are
// async-signal-safe (POSIX), called in a fork child of a threaded program.
template <class Exec>
int exec_list(const char* arg0, va_list ap, bool with_env, const Exec& exec) {
  size_t n = 1;
  if (arg0) {
    va_list count;
    va_copy(count, ap);
    while (va_arg(count, char*)) n++;
    va_end(count);
  }
  auto** argv = static_cast<char**>(alloca((n + 1) * sizeof(char*)));
  argv[0] = const_cast<char*>(arg0);
  for (size_t i = 1; i < n; i++) argv[i] = va_arg(ap, char*);
  argv[n] = nullptr;
  if (arg0) va_arg(ap, char*);  // the null
  char* const* envp = with_env ? va_arg(ap, char* const*) : environ;
  before_exec();
  return exec(argv, envp);
}

}  // namespace

void set_before_exec(void (*hook)()) { g_hook.store(hook, std::memory_order_release); }

}  // namespace ss::interpose

using ss::interpose::before_exec;
using ss::interpose::real;

SS_PRELOAD_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  before_exec();
  return real().execve(path, argv, envp);
}

SS_PRELOAD_EXPORT int execv(const char* path, char* const argv[]) {
  before_exec();
  return real().execve(path, argv, environ);
}

SS_PRELOAD_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  before_exec();
  return real().execvpe(file, argv, envp);
}

SS_PRELOAD_EXPORT int execvp(const char* file, char* const argv[]) {
  before_exec();
  return real().execvpe(file, argv, environ);
}

SS_PRELOAD_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  before_exec();
  return real().fexecve(fd, argv, envp);
}

SS_PRELOAD_EXPORT int execveat(int dirfd, const char* path, char* const argv[],
                               char* const envp[], int flags) {
  before_exec();
  return real().execveat(dirfd, path, argv, envp, flags);
}

SS_PRELOAD_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = ss::interpose::exec_list(arg, ap, false, [&](char* const* argv, char* const* envp) {
    return real().execve(path, argv, envp);
  });
  va_end(ap);
  return r;
}

SS_PRELOAD_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = ss::interpose::exec_list(arg, ap, true, [&](char* const* argv, char* const* envp) {
    return real().execve(path, argv, envp);
  });
  va_end(ap);
  return r;
}

SS_PRELOAD_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = ss::interpose::exec_list(arg, ap, false, [&](char* const* argv, char* const* envp) {
    return real().execvpe(file, argv, envp);
  });
  va_end(ap);
  return r;
}
