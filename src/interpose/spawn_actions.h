// posix_spawn's file actions as the program adds them. A dup2 action
// passes its source descriptor to the child whatever the source's
// FD_CLOEXEC, so the exec hook must count that descriptor as one the new
// image gets. libc keeps the actions in a layout of its own: they are
// noted here as they are added (posix_spawn_file_actions_adddup2), and
// forgotten at init and destroy.
#pragma once
#include <spawn.h>

#include <vector>

namespace ss::interpose {

// One dup2 action: the child gets `from` at `to`.
struct SpawnDup {
  int from, to;
};

// `fa`'s dup2 actions, in the order added (none for a null `fa`).
std::vector<SpawnDup> spawn_dup2_actions(const posix_spawn_file_actions_t* fa);

}  // namespace ss::interpose
