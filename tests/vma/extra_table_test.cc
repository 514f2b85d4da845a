// build_extra_table (src/libvmacompat/extra_table.h): the mask says
// exactly which entries the library gave, those entries are the library's
// functions, and every other entry fails with -1/EOPNOTSUPP after one
// warning.
#include "libvmacompat/extra_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "tests/common/stderr_capture.h"

namespace {

// Calls a slot with every argument zero or null.
template <typename... Args>
int call_zeroed(int (*fn)(Args...)) {
  return fn(Args{}...);
}

// A library function for any slot: returns a value no stand-in returns.
constexpr int kProvided = 42;
template <typename Fn>
struct Fake;
template <typename... Args>
struct Fake<int (*)(Args...)> {
  static int call(Args...) { return kProvided; }
};

// Every slot filled with a fake, or only the slots whose bit is in `bits`.
vma_api_t provide(uint64_t bits) {
  vma_api_t p{};
#define SS_PROVIDE(slot, bit) \
  if (bits & static_cast<uint64_t>(bit)) p.slot = &Fake<decltype(p.slot)>::call;
  SS_VMA_EXTRA_SLOTS(SS_PROVIDE)
#undef SS_PROVIDE
  return p;
}

constexpr uint64_t kAllBits = 0
#define SS_BIT(slot, bit) | static_cast<uint64_t>(bit)
    SS_VMA_EXTRA_SLOTS(SS_BIT)
#undef SS_BIT
    ;

// For each slot: its bit in the mask, and what a zeroed call gives.
struct Seen {
  int slots = 0, refused = 0, provided = 0, mask_mismatch = 0;
};
Seen walk(const vma_api_t& t) {
  Seen s;
  sstest::StderrCapture quiet;  // the stand-ins' warnings (checked below)
#define SS_WALK(slot, bit)                                          \
  {                                                                 \
    s.slots++;                                                      \
    EXPECT_NE(t.slot, nullptr) << #slot;                            \
    errno = 0;                                                      \
    const int r = call_zeroed(t.slot);                              \
    const bool in_mask = (t.vma_extra_supported_mask & (bit)) != 0; \
    if (r == kProvided) {                                           \
      s.provided++;                                                 \
      s.mask_mismatch += !in_mask;                                  \
    } else {                                                        \
      EXPECT_EQ(r, -1) << #slot;                                    \
      EXPECT_EQ(errno, EOPNOTSUPP) << #slot;                        \
      s.refused++;                                                  \
      s.mask_mismatch += in_mask;                                   \
    }                                                               \
  }
  SS_VMA_EXTRA_SLOTS(SS_WALK)
#undef SS_WALK
  return s;
}

TEST(ExtraTable, NothingProvidedRefusesEveryEntryWithAClearMask) {
  const vma_api_t t = ss::vma::build_extra_table(vma_api_t{});
  EXPECT_EQ(t.vma_extra_supported_mask, 0u);
  const Seen s = walk(t);
  EXPECT_EQ(s.slots, 20);
  EXPECT_EQ(s.refused, 20);
  EXPECT_EQ(s.mask_mismatch, 0);
}

TEST(ExtraTable, MaskHasExactlyTheProvidedEntries) {
  const uint64_t bits = VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS |
                        VMA_EXTRA_API_SOCKETXTREME_POLL | VMA_EXTRA_API_IOCTL;
  const vma_api_t p = provide(bits);
  const vma_api_t t = ss::vma::build_extra_table(p);
  EXPECT_EQ(t.vma_extra_supported_mask, bits);
  EXPECT_EQ(t.recvfrom_zcopy, p.recvfrom_zcopy);
  EXPECT_EQ(t.ioctl, p.ioctl);
  const Seen s = walk(t);
  EXPECT_EQ(s.provided, 4);
  EXPECT_EQ(s.refused, 16);
  EXPECT_EQ(s.mask_mismatch, 0);
}

TEST(ExtraTable, EverythingProvidedSetsEveryDefinedBitAndNoOther) {
  const vma_api_t t = ss::vma::build_extra_table(provide(kAllBits));
  EXPECT_EQ(t.vma_extra_supported_mask, kAllBits);
  // Bits 15 and 19 are unused (removed entries), nothing above 21 exists.
  EXPECT_EQ(t.vma_extra_supported_mask & ((1ull << 15) | (1ull << 19) | ~((1ull << 22) - 1)), 0u);
  const Seen s = walk(t);
  EXPECT_EQ(s.provided, 20);
  EXPECT_EQ(s.mask_mismatch, 0);
}

TEST(ExtraTable, InputMaskIsIgnored) {
  vma_api_t p = provide(VMA_EXTRA_API_DUMP_FD_STATS);
  p.vma_extra_supported_mask = ~0ull;  // a claim without functions
  const vma_api_t t = ss::vma::build_extra_table(p);
  EXPECT_EQ(t.vma_extra_supported_mask, static_cast<uint64_t>(VMA_EXTRA_API_DUMP_FD_STATS));
}

// In a fresh process (the warnings are once per process): each missing
// entry warns on its first call only, naming itself.
void warn_once_then_exit() {
  setenv("SLIPSTREAM_LOG_LEVEL", "warn", 1);
  const vma_api_t t = ss::vma::build_extra_table(provide(VMA_EXTRA_API_FREE_PACKETS));
  sstest::StderrCapture cap;
  call_zeroed(t.recvfrom_zcopy);
  call_zeroed(t.recvfrom_zcopy);
  call_zeroed(t.free_packets);  // provided: no warning
  call_zeroed(t.socketxtreme_poll);
  const std::string out = cap.text();
  auto count = [&](const std::string& what) {
    int n = 0;
    for (size_t at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) n++;
    return n;
  };
  const bool ok = count("recvfrom_zcopy is not provided") == 1 &&
                  count("socketxtreme_poll is not provided") == 1 && count("free_packets") == 0 &&
                  count("\n") == 2;
  fprintf(stderr, "%s", out.c_str());
  _exit(ok ? 0 : 1);
}

TEST(ExtraTableDeathTest, MissingEntryWarnsOnceNamingItself) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-executed: fresh once-flags
  EXPECT_EXIT(warn_once_then_exit(), ::testing::ExitedWithCode(0),
              "WARN: VMA Extra API: recvfrom_zcopy is not provided");
}

}  // namespace
