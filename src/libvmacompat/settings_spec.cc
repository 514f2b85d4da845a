// VMA_SPEC's profiles (reference §9.1) as a value source of the VMA table:
// consulted after the environment and before the defaults, so a profile's
// value replaces a default and an explicit VMA_* variable still wins, the
// order libvma applies them in (profile first, then each variable). Only
// the overrides that land on rows of our table are listed; the rest concern
// libvma's verbs queues and lwIP (see libvmacompat(7)). `rti` changes
// nothing here: the reference lists no overrides for it. VMA_SOCKETXTREME's
// own default for VMA_RX_WRE is a source of the same kind, after the
// profile.
#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/base/config_parse.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/settings_choices.h"

namespace ss::vma::settings {
namespace {

struct Override {
  Id id;
  const char* text;  // parsed by the row's own rules
};

constexpr Override kLatency[] = {
    {Id::kRxWre, "256"},
    {Id::kTxWre, "256"},
    {Id::kRxPoll, "-1"},
    {Id::kSelectPoll, "-1"},
    {Id::kThreadMode, "0"},
    {Id::kMemAllocType, "2"},
    {Id::kProgressEngineInterval, "100"},
    {Id::kSelectPollOsRatio, "1"},
    {Id::kSelectSkipOs, "1"},
};
// ultra-latency: these first, then latency's.
constexpr Override kUltraLatency[] = {
    {Id::kTxBufs, "512"},          {Id::kRxBufs, "1024"},    {Id::kRxUdpPollOsRatio, "0"},
    {Id::kSelectPollOsRatio, "0"}, {Id::kSelectSkipOs, "0"}, {Id::kProgressEngineInterval, "0"},
};
constexpr Override kMultiRingLatency[] = {
    {Id::kMemAllocType, "2"},
    {Id::kSelectPoll, "-1"},
    {Id::kRxPoll, "-1"},
    {Id::kRingAllocationLogicRx, "20"},
    {Id::kRingAllocationLogicTx, "20"},
    {Id::kSelectPollOsRatio, "0"},
    {Id::kSelectSkipOs, "0"},
};
constexpr Override kLbm[] = {{Id::kRxPoll, "0"}};  // 29west, wombat_fh
constexpr Override kMcd[] = {{Id::kRingAllocationLogicRx, "31"},
                             {Id::kRingAllocationLogicTx, "31"}};
constexpr Override kMcdIrq[] = {{Id::kRingAllocationLogicRx, "31"},
                                {Id::kRingAllocationLogicTx, "31"},
                                {Id::kRxPoll, "0"},
                                {Id::kSelectPoll, "0"}};
constexpr Override k7750[] = {{Id::kTxBufs, "8192"},     {Id::kRxBufs, "204800"},
                              {Id::kTraceLevel, "warn"}, {Id::kStatsFdNum, "1024"},
                              {Id::kRxPoll, "-1"},       {Id::kSelectPoll, "-1"}};

struct List {
  const Override* rows;
  size_t n;
};
template <size_t N>
constexpr List list(const Override (&a)[N]) {
  return {a, N};
}

// A profile's lists, searched in order (the first naming the row wins).
struct Profile {
  List first, second;
};

Profile profile_of(Spec s) {
  switch (s) {
    case Spec::kLatency:
      return {list(kLatency), {}};
    case Spec::kUltraLatency:
      return {list(kUltraLatency), list(kLatency)};
    case Spec::k29West:
    case Spec::kWombatFh:
      return {list(kLbm), {}};
    case Spec::kMcd:
      return {list(kMcd), {}};
    case Spec::kMcdIrq:
      return {list(kMcdIrq), {}};
    case Spec::k7750:
      return {list(k7750), {}};
    case Spec::kMultiRingLatency:
      return {list(kMultiRingLatency), {}};
    case Spec::kNone:
    case Spec::kRti:
      return {};
  }
  return {};
}

const char* find(List l, int row) {
  for (size_t i = 0; i < l.n; ++i)
    if (static_cast<int>(l.rows[i].id) == row) return l.rows[i].text;
  return nullptr;
}

class SpecProfile final : public config::ValueSource {
 public:
  config::Source kind() const override { return config::Source::kRules; }

  // Runs under the settings lock, so it reads VMA_SPEC itself (the row's
  // own choices; a bad value is the row's warning and means no profile).
  long lookup(const config::Component& c, const config::Setting& s, char* text, size_t cap,
              char* origin, size_t ocap) const override {
    if (&c != &table || s.id == static_cast<int>(Id::kSpec)) return -ENOENT;
    const char* v = secure_getenv("VMA_SPEC");
    if (!v) return -ENOENT;
    const int choice = config::parse_choice(v, strlen(v), kSpecChoices);
    if (choice < 0) return -ENOENT;
    const Spec spec = spec_of_choice(choice);
    const Profile p = profile_of(spec);
    const char* found = find(p.first, s.id);
    if (!found) found = find(p.second, s.id);
    if (!found) return -ENOENT;
    char name[32];
    config::choice_at(kSpecChoices, static_cast<int>(spec), name, sizeof name);
    snprintf(origin, ocap, "VMA_SPEC=%s", name);
    return snprintf(text, cap, "%s", found);
  }
};

// VMA_SOCKETXTREME=1 makes 1024 VMA_RX_WRE's default, as libvma does: it
// reads that variable first, so a profile's value and an explicit
// VMA_RX_WRE still win (this source is consulted after the profile's).
class SocketXtremeDefaults final : public config::ValueSource {
 public:
  config::Source kind() const override { return config::Source::kRules; }

  // Reads VMA_SOCKETXTREME itself (under the settings lock); a value the
  // row refuses is the row's warning and means off, as the row's default.
  long lookup(const config::Component& c, const config::Setting& s, char* text, size_t cap,
              char* origin, size_t ocap) const override {
    if (&c != &table || s.id != static_cast<int>(Id::kRxWre)) return -ENOENT;
    const char* v = secure_getenv("VMA_SOCKETXTREME");
    if (!v || config::parse_choice(v, strlen(v), "0|1") != 1) return -ENOENT;
    snprintf(origin, ocap, "VMA_SOCKETXTREME=1");
    return snprintf(text, cap, "1024");
  }
};

constinit const SpecProfile g_profile{};
constinit const SocketXtremeDefaults g_xtreme{};

// Added when the library loads, so the first read already sees them; in
// this order, the profile first.
struct AddProfile {
  AddProfile() {
    table.add_source(&g_profile);
    table.add_source(&g_xtreme);
  }
} const g_add_profile;

}  // namespace
}  // namespace ss::vma::settings
