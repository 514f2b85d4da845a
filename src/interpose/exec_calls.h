// exec under a preload. What a preload carries in the process's memory
// (a connection of its own TCP, an rsocket) does not reach the new image
// by itself: a preload that carries such things sets a hook that gives
// them to the kernel, or hands their state to the new image, before the
// image goes. The whole family is interposed (execve, execv,
// execvp, execvpe, execl, execlp, execle, fexecve, execveat), each calling
// the hook and then libc's execve, execvpe, fexecve or execveat: libc's
// own exec calls reach execve inside libc, where no preload sees them.
// posix_spawn, posix_spawnp, system and popen start a new image in a
// child that runs no fork handler and execs inside libc: the hook runs
// in the parent before them (its environment entry reaches a spawn's
// child only). Exported only by a preload whose exports name them
// (libvma.so exports everything it defines; librspreload's map lists
// the exec family and the spawns, not system and popen).
#pragma once
#include <cstddef>

#include "interpose/spawn_actions.h"

namespace ss::interpose {

// The hook, run before each exec (in the calling thread; after a fork,
// in the child) with the environment the new image gets, a spawn's dup2
// actions (`dups`: the child gets their sources whatever their
// FD_CLOEXEC) and whether this process goes on beside the new image (a
// spawn, system, popen). It may return one more "NAME=value" entry for
// that environment (one of the same name is left out), valid until the
// exec returns, or null.
using BeforeExec = const char* (*)(char* const* envp, const SpawnDup* dups, size_t n_dups,
                                   bool spawn);
void set_before_exec(BeforeExec hook);
// Run when an exec failed and this image goes on: undoes what the hook
// did. Null: none.
void set_exec_failed(void (*hook)());
// Run when a spawn started its child: what the hook set up for the
// child's exec alone is undone here (this process goes on). Null: none.
void set_spawned(void (*hook)());

}  // namespace ss::interpose
