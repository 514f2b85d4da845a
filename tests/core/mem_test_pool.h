// Test helper: a Pool from the few options tests vary.
#pragma once
#include <gtest/gtest.h>

#include <memory>

#include "core/mem/pool.h"

namespace ss::mem {

inline PoolOptions pool_options(size_t frame, size_t per_chunk, size_t chunks, size_t headroom = 0,
                                Backing backing = Backing::kShared) {
  PoolOptions opt;
  opt.frame_size = frame;
  opt.frames_per_chunk = per_chunk;
  opt.max_chunks = chunks;
  opt.headroom = headroom;
  opt.backing = backing;
  return opt;
}

inline std::unique_ptr<Pool> make_pool(size_t frame, size_t per_chunk, size_t chunks,
                                       size_t headroom = 0, Backing backing = Backing::kShared) {
  std::unique_ptr<Pool> p;
  EXPECT_EQ(Pool::create(pool_options(frame, per_chunk, chunks, headroom, backing), &p), 0);
  return p;
}

}  // namespace ss::mem
