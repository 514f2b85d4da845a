// exec under a preload. What a preload carries in the process's memory
// (a connection of its own TCP) does not reach the new image: a preload
// that carries such things sets a hook that gives them to the kernel
// before the image goes. The whole family is interposed (execve, execv,
// execvp, execvpe, execl, execlp, execle, fexecve, execveat), each calling
// the hook and then libc's execve, execvpe, fexecve or execveat: libc's
// own exec calls reach execve inside libc, where no preload sees them.
// Exported only by a preload whose exports name them (libvma.so exports
// everything it defines; librspreload's map lists them or not).
#pragma once

namespace ss::interpose {

// The hook, run before each exec (in the calling thread; after a fork,
// in the child). Null: none.
void set_before_exec(void (*hook)());

}  // namespace ss::interpose
