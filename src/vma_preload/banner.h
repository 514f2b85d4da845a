// The start-up banner, in libvma's shape and at libvma's levels: the
// version and command line at info; time, pid, machine at debug; every
// VMA_* setting as "description value [VARIABLE]", at info when it differs
// from its default and at details otherwise.
#pragma once

namespace ss::vma::preload {

void print_banner();

}  // namespace ss::vma::preload
