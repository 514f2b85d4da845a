// Fuzz target: a vmastat.<pid> file (src/libvmacompat/stats_layout.h) as
// vma_stats reads it: parsed, settled against a second copy, turned into
// rates against that copy, and printed in every view, so garbled figures,
// addresses and names go through the formatting too.
#include <cstdint>
#include <cstdio>
#include <string>

#include "libvmacompat/stats_format.h"
#include "libvmacompat/stats_reader.h"

using namespace ss::vma::stats;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FILE* sink = fopen("/dev/null", "w");
  Snapshot first, second;
  std::string error;
  if (!parse(data, size, &first, &error)) return 0;
  // The second copy: the same bytes, the first copy's last block rewritten.
  if (!parse(data, size, &second, &error)) __builtin_trap();
  if (!first.sockets.empty()) first.sockets.back().block.seq += 1;
  settle(first, &second);
  const Snapshot rates = per_second(first, second, 0.5);
  for (int level : {1, 2, 3, 5}) {
    print_view(sink, second, ViewOptions{level, {}, false});
    print_view(sink, rates, ViewOptions{level, {{0, 2}, {7, 9}}, true});
  }
  return 0;
}
