#include "vma_preload/inert_settings.h"

#include <string>

#include "core/base/log.h"
#include "libvmacompat/settings.h"

namespace ss::vma::preload {
namespace {

using settings::Id;

// Read, listed and shown in the banner, but nothing here uses them
// (libvmacompat(7), STATUS): verbs and lwIP tuning without a counterpart
// on AF_XDP rings, and the log line's prefix options.
constexpr Id kInert[] = {Id::kLogDetails,
                         Id::kLogColors,
                         Id::kRxBufs,
                         Id::kTxBufs,
                         Id::kRxPollInit,
                         Id::kRxBytesMin,
                         Id::kProgressEngineInterval,
                         Id::kThreadMode,
                         Id::kTxNonblockedEagains};

// Acted on as with 1 only: 0 asks for what this release does not do.
constexpr Id kOnlyOne[] = {Id::kFork, Id::kCloseOnDup2};

}  // namespace

void warn_inert_settings() {
  config::Component& t = settings::table;
  for (const Id id : kInert) {
    const int i = static_cast<int>(id);
    // Set by the user: VMA_SPEC's profiles (kRules) set some of these too.
    const config::Source from = t.source(i);
    if (from != config::Source::kEnv && from != config::Source::kFile) continue;
    SS_WARN("%s=%s is read but not acted on in this release (libvmacompat(7))", t.row(i)->env[0],
            t.get_string(i).c_str());
  }
  for (const Id id : kOnlyOne) {
    const int i = static_cast<int>(id);
    if (settings::get(id) != 0) continue;
    SS_WARN("%s=0 is not supported: handled as 1 (libvma(7))", t.row(i)->env[0]);
  }
}

}  // namespace ss::vma::preload
