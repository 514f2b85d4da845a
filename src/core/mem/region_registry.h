// Internal to core/mem: the process-wide set of live Regions, looked up by
// address. Lookups vastly outnumber changes, so readers share a lock over a
// sorted vector. TODO: move to liburcu RCU so lookups take no lock at all.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ss::mem::registry {

// 0, or -ENOMEM. Ranges never overlap: each one is a live mapping. The
// registry owns `fd` from then on (it closes it at remove or drop).
int add(const void* addr, size_t len, int fd);
void remove(const void* addr);
// With `take`, the fd becomes the caller's. False when no region holds
// the range or its fd is gone (taken or dropped).
bool find(const void* addr, size_t len, int* fd, uint64_t* offset, bool take = false);
// Closes the fd of the region holding the range, if it still has one.
void drop_fd(const void* addr, size_t len);

}  // namespace ss::mem::registry
