// What the processes of a family share on one netdev: the process that
// made the rings (slot 0) and the fork children that joined its queues
// (xdp_join.h), each with its own AF_XDP socket on every queue. Their
// sockets share the owner's UMEM and so each queue's one fill ring, whose
// producer side they take turns at under a process-shared lock here. A
// memfd page the owner makes; a joining process maps the descriptor.
#pragma once
#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "core/prov/xdp/steer_abi.h"

namespace ss::prov::xdp {

struct FamilyPage {
  struct alignas(64) Lock {
    pthread_mutex_t mu;  // process-shared, robust: a holder may be killed
  };
  Lock fill[SS_MAX_QUEUES];
  std::atomic<pid_t> slot_pid[SS_MAX_SLOTS];  // a slot's process; 0 free
};

// The owner's page: its memfd (the caller's, kept to pass on) and its
// mapping. 0 or -errno.
int family_create(int* fd, FamilyPage** out);
// Another process's mapping of the page behind fd. 0 or -errno.
int family_map(int fd, FamilyPage** out);
void family_unmap(FamilyPage* p);

// A free slot (1..SS_MAX_SLOTS-1) taken for pid; a slot whose process
// has exited is free again. -ENOSPC when every one is taken.
int family_claim_slot(FamilyPage* p, pid_t pid);
void family_release_slot(FamilyPage* p, int slot, pid_t pid);
// Whether slot's process is there (taken, and not exited).
bool family_slot_alive(const FamilyPage* p, int slot);

// The queue's fill-ring lock, and its release. A holder that died
// mid-turn left nothing half done: a turn publishes the producer index
// last, so the lock is marked consistent and taken.
void family_lock_fill(FamilyPage* p, uint32_t queue);
void family_unlock_fill(FamilyPage* p, uint32_t queue);

}  // namespace ss::prov::xdp
