// The VMA_* settings this release reads but does not act on: one warning
// for each the user set (a profile's values are its defaults, not warned
// about), so a tuning that changes nothing does not pass unnoticed.
#pragma once

namespace ss::vma::preload {

// At start, after the banner.
void warn_inert_settings();

}  // namespace ss::vma::preload
