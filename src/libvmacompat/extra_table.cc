#include "libvmacompat/extra_table.h"

#include <atomic>
#include <cerrno>

#include "core/base/log.h"

namespace ss::vma {
namespace {

#define SS_COUNT_SLOT(slot, bit) +1
constexpr int kFunctionSlots = 0 SS_VMA_EXTRA_SLOTS(SS_COUNT_SLOT);
#undef SS_COUNT_SLOT
static_assert(kFunctionSlots * sizeof(void (*)()) + sizeof(uint64_t) == sizeof(vma_api_t),
              "every function slot of vma_api_t is in SS_VMA_EXTRA_SLOTS");

// Entry names for the warning (template arguments need objects).
#define SS_SLOT_NAME(slot, bit) constexpr char kName_##slot[] = #slot;
SS_VMA_EXTRA_SLOTS(SS_SLOT_NAME)
#undef SS_SLOT_NAME

// The stand-in for an entry the library lacks, of that slot's type.
template <typename Fn>
struct Refuse;
template <typename... Args>
struct Refuse<int (*)(Args...)> {
  template <const char* kName>
  static int call(Args...) {
    SS_WARN_ONCE(
        "VMA Extra API: %s is not provided by this library (EOPNOTSUPP; its "
        "vma_extra_supported_mask bit is clear)",
        kName);
    errno = EOPNOTSUPP;
    return -1;
  }
};

}  // namespace

vma_api_t build_extra_table(const vma_api_t& provided) {
  vma_api_t table{};
#define SS_FILL_SLOT(slot, bit)                                     \
  if (provided.slot) {                                              \
    table.slot = provided.slot;                                     \
    table.vma_extra_supported_mask |= static_cast<uint64_t>(bit);   \
  } else {                                                          \
    table.slot = &Refuse<decltype(table.slot)>::call<kName_##slot>; \
  }
  SS_VMA_EXTRA_SLOTS(SS_FILL_SLOT)
#undef SS_FILL_SLOT
  return table;
}

}  // namespace ss::vma
