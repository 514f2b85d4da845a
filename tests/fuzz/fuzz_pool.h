// The frames a TCP fuzz target feeds its connection: one private pool of
// 512 frames of 2048 bytes per process, made at the first call.
#pragma once
#include <memory>

#include "core/mem/pool.h"

inline ss::mem::Pool* fuzz_pool() {
  static std::unique_ptr<ss::mem::Pool> pool = [] {
    ss::mem::PoolOptions po;
    po.frame_size = 2048;
    po.frames_per_chunk = 512;
    po.max_chunks = 1;
    po.backing = ss::mem::Backing::kPrivate;
    std::unique_ptr<ss::mem::Pool> p;
    ss::mem::Pool::create(po, &p);
    return p;
  }();
  return pool.get();
}
