// Every spelling libvma accepts for its enumerated variables, as the
// settings table's choice lists, and what each choice means. Shared by the
// table (settings.cc) and VMA_SPEC's profile source (settings_spec.cc),
// which reads VMA_SPEC itself and must parse it as the row does.
#pragma once
#include "libvmacompat/settings.h"

namespace ss::vma::settings {

// VMA_TRACELEVEL: the names, their aliases, then libvma's numbers 0..6.
inline constexpr const char* kTraceChoices =
    "none|panic|error|warn|info|details|debug|fine|finer|all|"
    "warning|information|func|func+|funcall|"
    "0|1|2|3|4|5|6";
inline constexpr int kTraceInfoChoice = 4;
// The internal level (TraceLevel) of each choice above.
inline constexpr int kTraceLevels[] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 2,
                                       3,  6, 7, 7, 0, 1, 2, 3, 5, 6, 7};

// VMA_SPEC: the names in libvma's enum order, then the numeric aliases
// (0 none, 10 ultra-latency, 15 latency, 29 29west, 554 wombat_fh,
// 623 mcd, 624 mcd-irq, 784 rti), then the enum's numbers 1..9.
inline constexpr const char* kSpecChoices =
    "none|ultra-latency|latency|29west|wombat_fh|mcd|mcd-irq|rti|7750|multi_ring_latency|"
    "0|10|15|29|554|623|624|784|"
    "1|2|3|4|5|6|7|8|9";
constexpr Spec spec_of_choice(int i) {
  constexpr Spec kAliases[] = {Spec::kNone,     Spec::kUltraLatency, Spec::kLatency, Spec::k29West,
                               Spec::kWombatFh, Spec::kMcd,          Spec::kMcdIrq,  Spec::kRti};
  constexpr int kNames = 10, kAliasCount = 8;
  if (i < 0) return Spec::kNone;
  if (i < kNames) return static_cast<Spec>(i);
  if (i < kNames + kAliasCount) return kAliases[i - kNames];
  if (i < kNames + kAliasCount + 9) return static_cast<Spec>(i - kNames - kAliasCount + 1);
  return Spec::kNone;
}

// VMA_RING_ALLOCATION_LOGIC_RX/_TX: libvma's numbers; any other is refused.
inline constexpr const char* kRingLogicChoices = "0|1|10|20|30|31";

}  // namespace ss::vma::settings
