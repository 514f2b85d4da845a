#include "interpose/exec_calls.h"

#include <alloca.h>
#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/spawn_actions.h"

namespace ss::interpose {
namespace {

std::atomic<BeforeExec> g_hook{nullptr};
std::atomic<void (*)()> g_failed{nullptr};
std::atomic<void (*)()> g_spawned{nullptr};

size_t entries(char* const* envp) {
  size_t n = 0;
  while (envp && envp[n]) n++;
  return n;
}

// `envp` with `extra` ("NAME=value") in place of any entry of its name,
// into `out` (room for entries(envp) + 2).
char* const* with_entry(char** out, char* const* envp, const char* extra) {
  const char* eq = strchr(extra, '=');
  const size_t name_len = eq ? static_cast<size_t>(eq - extra) + 1 : strlen(extra);
  size_t n = 0;
  for (size_t i = 0; envp && envp[i]; i++)
    if (strncmp(envp[i], extra, name_len) != 0) out[n++] = envp[i];
  out[n++] = const_cast<char*>(extra);
  out[n] = nullptr;
  return out;
}

// The hook, then `exec` with the environment it asked for, then the
// failure hook when `failed(result)` says no new image started. The new
// environment is on the stack, no allocation: execl and execle are
// async-signal-safe (POSIX), called in a fork child of a threaded program.
template <class Exec, class Failed>
int run_image(char* const* envp, const Exec& exec, const Failed& failed,
              const SpawnDup* dups = nullptr, size_t n_dups = 0, bool spawn = false) {
  const BeforeExec hook = g_hook.load(std::memory_order_acquire);
  const char* extra = hook ? hook(envp, dups, n_dups, spawn) : nullptr;
  char* const* env = envp;
  if (extra)
    env = with_entry(static_cast<char**>(alloca((entries(envp) + 2) * sizeof(char*))), envp, extra);
  const int r = exec(env);
  const int err = errno;
  const bool no_image = failed(r);
  void (*after)() = (no_image ? g_failed : g_spawned).load(std::memory_order_acquire);
  if (after && (spawn || no_image)) after();
  errno = err;
  return r;
}

// An exec returns only when it failed.
template <class Exec>
int run_exec(char* const* envp, const Exec& exec) {
  return run_image(envp, exec, [](int) { return true; });
}

// posix_spawn and posix_spawnp: the new image starts in a child that runs
// no fork handler and calls libc's own exec, so the hook runs here in the
// parent; they return an error number when no child started.
template <class Spawn>
int run_spawn(char* const* envp, const posix_spawn_file_actions_t* fa, const Spawn& spawn) {
  const std::vector<SpawnDup> dups = spawn_dup2_actions(fa);
  return run_image(
      envp, spawn, [](int r) { return r != 0; }, dups.data(), dups.size(), true);
}

// system and popen: a shell started with the process's environment (the
// hook's entry, if any, does not reach it).
template <class Start, class T>
T run_shell(const Start& start, T failure) {
  if (const BeforeExec hook = g_hook.load(std::memory_order_acquire))
    hook(environ, nullptr, 0, true);
  const T r = start();
  const int err = errno;
  if (void (*after)() = (r == failure ? g_failed : g_spawned).load(std::memory_order_acquire))
    after();
  errno = err;
  return r;
}

// execl's list: exec with the arguments up to the null as argv, and the
// environment after the null (with_env: execle) or the process's.
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
  return run_exec(envp, [&](char* const* env) { return exec(argv, env); });
}

}  // namespace

void set_before_exec(BeforeExec hook) { g_hook.store(hook, std::memory_order_release); }
void set_exec_failed(void (*hook)()) { g_failed.store(hook, std::memory_order_release); }
void set_spawned(void (*hook)()) { g_spawned.store(hook, std::memory_order_release); }

}  // namespace ss::interpose

using ss::interpose::real;
using ss::interpose::run_exec;
using ss::interpose::run_shell;
using ss::interpose::run_spawn;

SS_PRELOAD_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  return run_exec(envp, [&](char* const* env) { return real().execve(path, argv, env); });
}

SS_PRELOAD_EXPORT int execv(const char* path, char* const argv[]) {
  return run_exec(environ, [&](char* const* env) { return real().execve(path, argv, env); });
}

SS_PRELOAD_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return run_exec(envp, [&](char* const* env) { return real().execvpe(file, argv, env); });
}

SS_PRELOAD_EXPORT int execvp(const char* file, char* const argv[]) {
  return run_exec(environ, [&](char* const* env) { return real().execvpe(file, argv, env); });
}

SS_PRELOAD_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  return run_exec(envp, [&](char* const* env) { return real().fexecve(fd, argv, env); });
}

SS_PRELOAD_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                               int flags) {
  return run_exec(envp,
                  [&](char* const* env) { return real().execveat(dirfd, path, argv, env, flags); });
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

SS_PRELOAD_EXPORT int posix_spawn(pid_t* pid, const char* path,
                                  const posix_spawn_file_actions_t* fa,
                                  const posix_spawnattr_t* attr, char* const argv[],
                                  char* const envp[]) {
  return run_spawn(envp, fa, [&](char* const* env) {
    return real().posix_spawn(pid, path, fa, attr, argv, env);
  });
}

SS_PRELOAD_EXPORT int posix_spawnp(pid_t* pid, const char* file,
                                   const posix_spawn_file_actions_t* fa,
                                   const posix_spawnattr_t* attr, char* const argv[],
                                   char* const envp[]) {
  return run_spawn(envp, fa, [&](char* const* env) {
    return real().posix_spawnp(pid, file, fa, attr, argv, env);
  });
}

SS_PRELOAD_EXPORT int system(const char* command) {
  if (!command) return real().system(command);  // only asks whether a shell exists
  return run_shell([&] { return real().system(command); }, -1);
}

SS_PRELOAD_EXPORT FILE* popen(const char* command, const char* type) {
  return run_shell([&] { return real().popen(command, type); }, static_cast<FILE*>(nullptr));
}
