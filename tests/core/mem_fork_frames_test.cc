// ForkFrames: the frames a process holds in a MADV_DONTFORK pool follow a
// fork child as private copies at their addresses; frames nobody holds,
// and those the caller skips, are zeros there and take no page.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/mem/buffer.h"
#include "core/mem/fork_frames.h"
#include "core/mem/pool.h"

namespace ss::mem {
namespace {

bool mapped(const void* p) {
  const auto page = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
  return msync(reinterpret_cast<void*>(page), 4096, MS_ASYNC) == 0;
}

// Whether p's page has memory (before anything reads it).
bool resident(const void* p) {
  const auto page = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
  unsigned char v = 0;
  return mincore(reinterpret_cast<void*>(page), 4096, &v) == 0 && (v & 1);
}

bool all(const void* p, uint8_t v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (static_cast<const uint8_t*>(p)[i] != v) return false;
  return true;
}

// fork, run child() there (its return is the exit code), the child's exit code.
template <typename F>
int in_child(ForkFrames* ff, F child) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  ff->drop();
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

struct Shape {
  size_t frame_size, frames_per_chunk, max_chunks;
};

class ForkFramesTest : public ::testing::TestWithParam<Shape> {};

// Held frame 0 and the first frame of the last chunk follow, whole
// (readable, writable, the parent's unchanged); frame 1 (free) is zeros;
// a skipped held frame and a free frame further on are zeros that take
// no page.
TEST_P(ForkFramesTest, HeldFramesFollowTheChildAsPrivateCopies) {
  const Shape sh = GetParam();
  PoolOptions o;
  o.frame_size = sh.frame_size;
  o.frames_per_chunk = sh.frames_per_chunk;
  o.max_chunks = sh.max_chunks;
  o.backing = Backing::kShared;
  o.dont_fork = true;
  std::unique_ptr<Pool> p;
  ASSERT_EQ(Pool::create(o, &p), 0);
  // Every frame taken, so the pool grows to its last chunk; then only
  // frames 0, 4 and the last chunk's first kept (4 to be skipped).
  std::vector<Buffer> bufs;
  for (Buffer b; (b = p->get());) bufs.push_back(std::move(b));
  ASSERT_EQ(bufs.size(), sh.frames_per_chunk * sh.max_chunks);
  const uint32_t last = static_cast<uint32_t>((sh.max_chunks - 1) * sh.frames_per_chunk);
  const size_t fs = sh.frame_size;
  for (uint32_t i = 0; i < bufs.size(); i++) memset(p->frame_data(i), 0x10 + int(i % 200), fs);
  char* f0 = p->frame_data(0);
  char* f1 = p->frame_data(1);
  char* skipped = p->frame_data(4);
  char* far = p->frame_data(8);
  char* in_last = p->frame_data(last);
  for (Buffer& b : bufs)
    if (b.data() != f0 && b.data() != skipped && b.data() != in_last) b = Buffer();
  std::vector<uint8_t> skip(5, 0);
  skip[4] = 1;
  ForkFrames ff;
  ASSERT_EQ(ff.take(*p, skip), last ? 2 : 1);
  const int rc = in_child(&ff, [&] {
    if (ff.place() != 0) return 2;
    if (resident(skipped) || resident(far) || (fs >= 4096 && resident(f1))) return 5;
    if (!all(f0, 0x10, fs) || !all(in_last, uint8_t(0x10 + last % 200), fs)) return 3;
    if (!all(f1, 0, fs)) return 4;
    if (!all(skipped, 0, fs) || !all(far, 0, fs)) return 5;
    memset(f0, 0x77, fs);  // private: the parent's stays
    return all(f0, 0x77, fs) ? 0 : 6;
  });
  EXPECT_EQ(rc, 0) << "2: not placed, 3: not the frames' bytes, 4: a free neighbour's bytes, "
                      "5: a skipped or free frame there, 6: not writable";
  EXPECT_TRUE(all(f0, 0x10, fs)) << "the child's write reached the parent";
  EXPECT_EQ(ff.frames(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ForkFramesTest,
                         ::testing::Values(Shape{2048, 64, 1}, Shape{4096, 64, 1},
                                           Shape{8192, 16, 1}, Shape{2048, 16, 3}),
                         [](const auto& info) {
                           return std::to_string(info.param.frame_size) + "x" +
                                  std::to_string(info.param.frames_per_chunk) + "x" +
                                  std::to_string(info.param.max_chunks);
                         });

// A child that already has a mapping where a frame was keeps it: place()
// says -EEXIST and writes nothing there.
TEST(ForkFramesPlace, AMappingAlreadyThereIsLeftAlone) {
  PoolOptions o;
  o.frame_size = 4096;
  o.frames_per_chunk = 16;
  o.dont_fork = true;
  std::unique_ptr<Pool> p;
  ASSERT_EQ(Pool::create(o, &p), 0);
  Buffer b = p->get();
  memset(b.data(), 0x5a, 64);
  ForkFrames ff;
  ASSERT_EQ(ff.take(*p, {}), 1);
  char* at = p->frame_data(0);
  const int rc = in_child(&ff, [&] {
    void* m =
        mmap(at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (m != at) return 2;
    memset(at, 0x33, 64);
    if (ff.place() != -EEXIST) return 3;
    return all(at, 0x33, 64) ? 0 : 4;
  });
  EXPECT_EQ(rc, 0) << "2: no mapping made, 3: not -EEXIST, 4: written over";
}

// Nothing held: nothing taken; the area is the child's, taking no page.
TEST(ForkFramesPlace, NothingHeldNothingTaken) {
  PoolOptions o;
  o.frames_per_chunk = 16;
  o.dont_fork = true;
  std::unique_ptr<Pool> p;
  ASSERT_EQ(Pool::create(o, &p), 0);
  ForkFrames ff;
  ASSERT_EQ(ff.take(*p, {}), 0);
  char* at = p->frame_data(0);
  EXPECT_EQ(in_child(&ff, [&] { return ff.place() == 0 && mapped(at) && !resident(at) ? 0 : 1; }),
            0);
}

}  // namespace
}  // namespace ss::mem
