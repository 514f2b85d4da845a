// The reading side of vma_stats: a vmastat file's bytes, checked before use
// (magic, version, sizes, the fd count against the file's length) and
// copied out block by block, never trusted for an offset or a length. The
// file is read with read(2) rather than mapped, so a file truncated under
// the reader is a short read, not SIGBUS. A block being rewritten is
// caught by reading the file twice: only blocks both copies show live,
// with the same even sequence and the same identity, are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "libvmacompat/stats_layout.h"

namespace ss::vma::stats {

struct SocketEntry {
  uint32_t index;  // the block's place in the file
  SocketBlock block;
};
struct GroupEntry {
  uint32_t index;  // rings, then pools, then iomux
  GroupBlock block;
};

struct Snapshot {
  int pid = 0;
  uint64_t start_ticks = 0;
  uint32_t state = 0;  // kLive, or kClosing once its process is exiting
  uint32_t fd_blocks = 0;
  uint8_t ver_info[4] = {};
  std::string app_name;              // non-printable bytes replaced by '?'
  std::vector<SocketEntry> sockets;  // live blocks, in file order
  std::vector<GroupEntry> groups;    // live blocks, in file order
  uint32_t garbled = 0;              // blocks skipped: state or kind not ours
};

// One copy of a file. false with *error set (one line, no newline) when the
// bytes are not a vmastat file of this layout, or are cut short.
bool parse(const void* data, size_t size, Snapshot* out, std::string* error);
// Keeps the entries of `later` that an entry of `earlier` with the same
// index has and `keep(earlier_block, later_block)` accepts (it may change
// the later block). Both in index order, as parse makes them.
template <typename Entry, typename Keep>
void keep_matching(const std::vector<Entry>& earlier, std::vector<Entry>* later, Keep keep) {
  auto it = earlier.begin();
  size_t kept = 0;
  for (Entry& e : *later) {
    while (it != earlier.end() && it->index < e.index) ++it;
    if (it == earlier.end() || it->index != e.index || !keep(it->block, e.block)) continue;
    if (&(*later)[kept] != &e) (*later)[kept] = e;
    ++kept;
  }
  later->resize(kept);
}

// Keeps in `second` the blocks `first` (read just before) agrees with.
void settle(const Snapshot& first, Snapshot* second);
// Reads `path` twice, parses and settles both copies.
bool read_stats_file(const std::string& path, Snapshot* out, std::string* error);

struct StatsFile {
  std::string path;
  int pid;
};
// The files named vmastat.<pid> in `dir`, by pid.
std::vector<StatsFile> list_stats_files(const std::string& dir);

// A file whose process exited (normally or not) or whose pid now names
// another process.
bool is_stale(const Snapshot& s);

}  // namespace ss::vma::stats
