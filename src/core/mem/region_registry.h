// Internal to core/mem: the process-wide set of live Regions, looked up by
// address. Lookups vastly outnumber changes, so readers share a lock over a
// sorted vector. TODO: move to liburcu RCU so lookups take no lock at all.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ss::mem::registry {

// 0, or -ENOMEM. Ranges never overlap: each one is a live mapping.
int add(const void* addr, size_t len, int fd);
void remove(const void* addr);
bool find(const void* addr, size_t len, int* fd, uint64_t* offset);

}  // namespace ss::mem::registry
