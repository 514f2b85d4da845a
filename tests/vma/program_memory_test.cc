// interpose/program_memory: the program's memory checked through the
// kernel's copies (a bad pointer is EFAULT, never a crash), and the
// regions the preload lends (the rings' frames) and its own buffers
// taken without a check.
#include "interpose/program_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

namespace ss::interpose {
namespace {

TEST(ProgramMemory, BadPointersAreRefusedAndLentRegionsTrusted) {
  char here[64] = "readable";
  char out[8] = {};
  EXPECT_TRUE(program_readable(here, sizeof here));
  EXPECT_TRUE(program_writable(here, sizeof here));
  EXPECT_EQ(copy_to_program(out, "copied", 7), 0);
  EXPECT_STREQ(out, "copied");
  EXPECT_FALSE(program_readable(nullptr, 1));
  // A page nothing may touch: refused, until the preload says it lent it
  // (its own frames; trust is what it vouches for, not a check).
  void* none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(none, MAP_FAILED);
  EXPECT_FALSE(program_readable(none, 16));
  EXPECT_FALSE(program_writable(none, 16));
  EXPECT_EQ(copy_to_program(none, "x", 1), -EFAULT);
  // Two lent pages, then one nothing may touch.
  void* lent = mmap(nullptr, 12288, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(lent, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(lent) + 8192, 4096, PROT_NONE), 0);
  trust_region(lent, 8192);
  EXPECT_TRUE(program_readable(static_cast<char*>(lent) + 100, 64));
  EXPECT_TRUE(program_writable(static_cast<char*>(lent) + 8000, 192));
  EXPECT_FALSE(program_readable(static_cast<char*>(lent) + 8000, 300)) << "past its end: checked";
  munmap(none, 4096);
  munmap(lent, 12288);
}

// Within an OwnMemoryScope (sendfile's buffer handed to the preload's own
// send) nothing is checked; outside it, the same page is refused again.
TEST(ProgramMemory, OwnMemoryScopeSkipsTheChecksWhileItLives) {
  void* none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(none, MAP_FAILED);
  {
    const OwnMemoryScope own;
    EXPECT_TRUE(program_readable(none, 16));  // vouched for, not looked at
    {
      const OwnMemoryScope nested;
      EXPECT_TRUE(program_readable(none, 16));
    }
    EXPECT_TRUE(program_readable(none, 16));
  }
  EXPECT_FALSE(program_readable(none, 16));
  munmap(none, 4096);
}

}  // namespace
}  // namespace ss::interpose
