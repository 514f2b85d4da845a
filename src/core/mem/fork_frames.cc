#include "core/mem/fork_frames.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace ss::mem {

int ForkFrames::take(const Pool& pool, const std::vector<uint8_t>& skip) {
  Taken t;
  t.chunk_bytes = pool.chunk_bytes();
  t.frame_size = pool.frame_size();
  const size_t n = pool.frame_count();
  const size_t per_chunk = pool.frames_per_chunk();
  try {
    for (size_t c = 0; c < pool.chunk_count(); c++)
      t.chunks.push_back(static_cast<char*>(pool.chunk_base(c)));
    for (uint32_t i = 0; i < n; i++)
      if (!(i < skip.size() && skip[i]) && pool.frame_held(i))
        t.frames.push_back({pool.frame_data(i), i / per_chunk});
    taken_.reserve(taken_.size() + 1);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  if (!t.frames.empty()) {
    t.len = t.frames.size() * t.frame_size;
    void* m = mmap(nullptr, t.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return -ENOMEM;
    t.copy = static_cast<char*>(m);
    for (size_t k = 0; k < t.frames.size(); k++)
      memcpy(t.copy + k * t.frame_size, t.frames[k].at, t.frame_size);
  }
  const int got = static_cast<int>(t.frames.size());
  taken_.push_back(std::move(t));
  return got;
}

int ForkFrames::place() {
  int err = 0;
  for (const Taken& t : taken_) {
    std::vector<bool> placed(t.chunks.size(), false);
    for (size_t c = 0; c < t.chunks.size(); c++) {
      void* m = mmap(t.chunks[c], t.chunk_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      placed[c] = m == t.chunks[c];
      if (placed[c]) continue;
      if (m != MAP_FAILED) munmap(m, t.chunk_bytes);  // a kernel that took it as a hint
      if (!err) err = m == MAP_FAILED ? -errno : -EEXIST;
    }
    for (size_t k = 0; k < t.frames.size(); k++)
      if (placed[t.frames[k].chunk])
        memcpy(t.frames[k].at, t.copy + k * t.frame_size, t.frame_size);
  }
  drop();
  return err;
}

void ForkFrames::drop() {
  for (const Taken& t : taken_)
    if (t.copy) munmap(t.copy, t.len);
  taken_.clear();
}

}  // namespace ss::mem
