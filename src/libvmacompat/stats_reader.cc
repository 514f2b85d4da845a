#include "libvmacompat/stats_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "libvmacompat/stats_proc.h"

namespace ss::vma::stats {

namespace {

std::string printable(const char* s, size_t max) {
  std::string out(s, strnlen(s, max));
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

bool fail(std::string* error, std::string what) {
  if (error) *error = std::move(what);
  return false;
}

constexpr size_t kSocketIdentity = offsetof(SocketBlock, c) - offsetof(SocketBlock, fd);
constexpr size_t kGroupIdentity = offsetof(GroupBlock, c) - offsetof(GroupBlock, kind);

bool same_socket(const SocketBlock& a, const SocketBlock& b) {
  return a.seq == b.seq && a.seq % 2 == 0 && memcmp(&a.fd, &b.fd, kSocketIdentity) == 0;
}
bool same_group(const GroupBlock& a, const GroupBlock& b) {
  return a.seq == b.seq && a.seq % 2 == 0 && memcmp(&a.kind, &b.kind, kGroupIdentity) == 0;
}

}  // namespace

bool parse(const void* data, size_t size, Snapshot* out, std::string* error) {
  const auto* bytes = static_cast<const char*>(data);
  *out = Snapshot();
  Header h;
  if (size < offsetof(Header, header_size))
    return fail(error, "truncated: " + std::to_string(size) + " bytes, too short for a header");
  memcpy(&h, bytes, offsetof(Header, header_size));
  if (memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return fail(error, "not a vmastat file (bad magic)");
  if (h.version != kVersion)
    return fail(error, "layout version " + std::to_string(h.version) +
                           ", this reader reads version " + std::to_string(kVersion));
  if (size < sizeof h)
    return fail(error, "truncated: " + std::to_string(size) + " bytes, the header alone is " +
                           std::to_string(sizeof h));
  memcpy(&h, bytes, sizeof h);
  if (h.header_size != sizeof(Header) || h.block_size != sizeof(SocketBlock))
    return fail(error,
                "header or block size differs from layout version " + std::to_string(kVersion));
  if (strncmp(h.protocol, kProtocol, sizeof h.protocol) != 0)
    return fail(error, "protocol '" + printable(h.protocol, sizeof h.protocol) + "', expected '" +
                           kProtocol + "'");
  if (h.fd_blocks > kMaxFdBlocks)
    return fail(error, "fd count " + std::to_string(h.fd_blocks) + " above the maximum " +
                           std::to_string(kMaxFdBlocks));
  if (h.file_size != file_size_for(h.fd_blocks))
    return fail(error, "file size field " + std::to_string(h.file_size) + " disagrees with " +
                           std::to_string(h.fd_blocks) + " fd blocks");
  if (size < h.file_size)
    return fail(error, "truncated: " + std::to_string(size) + " bytes, the header says " +
                           std::to_string(h.file_size));
  if (h.state != kLive && h.state != kClosing) return fail(error, "not published yet");
  if (h.pid <= 0) return fail(error, "bad pid " + std::to_string(h.pid));

  out->pid = h.pid;
  out->start_ticks = h.start_ticks;
  out->state = h.state;
  out->fd_blocks = h.fd_blocks;
  memcpy(out->ver_info, h.ver_info, sizeof h.ver_info);
  out->app_name = printable(h.app_name, sizeof h.app_name);

  const GroupBlock* groups[] = {h.rings, h.pools, h.iomux};
  const uint32_t counts[] = {kRingGroups, kPoolGroups, kIomuxGroups};
  const uint32_t kinds[] = {kRing, kBufferPool, kIomux};
  uint32_t index = 0;
  for (int k = 0; k < 3; ++k) {
    for (uint32_t i = 0; i < counts[k]; ++i, ++index) {
      const GroupBlock& g = groups[k][i];
      if (g.state == kLive && g.kind == kinds[k])
        out->groups.push_back({index, g});
      else if (g.state > kClosing || (g.state == kLive && g.kind != kinds[k]))
        ++out->garbled;
    }
  }
  for (uint32_t i = 0; i < h.fd_blocks; ++i) {
    SocketEntry e{i, {}};
    memcpy(&e.block, bytes + sizeof(Header) + size_t{i} * sizeof(SocketBlock), sizeof e.block);
    if (e.block.state == kLive)
      out->sockets.push_back(e);
    else if (e.block.state > kClosing)
      ++out->garbled;
  }
  return true;
}

void settle(const Snapshot& first, Snapshot* second) {
  keep_matching(first.sockets, &second->sockets,
                [](const SocketBlock& a, const SocketBlock& b) { return same_socket(a, b); });
  keep_matching(first.groups, &second->groups,
                [](const GroupBlock& a, const GroupBlock& b) { return same_group(a, b); });
}

bool read_stats_file(const std::string& path, Snapshot* out, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return fail(error, path + ": " + strerror(errno));
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(error, path + ": not a regular file");
  }
  // Never more than the largest layout allows, whatever the file claims.
  const size_t want =
      std::min<uint64_t>(static_cast<uint64_t>(st.st_size), file_size_for(kMaxFdBlocks));
  std::vector<char> buf(want);
  Snapshot copies[2];
  bool ok = true;
  for (Snapshot& copy : copies) {
    size_t got = 0;
    while (got < want) {
      const ssize_t n = pread(fd, buf.data() + got, want - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    std::string why;
    if (!parse(buf.data(), got, &copy, &why)) {
      ok = fail(error, path + ": " + why);
      break;
    }
  }
  close(fd);
  if (!ok) return false;
  settle(copies[0], &copies[1]);
  *out = std::move(copies[1]);
  return true;
}

std::vector<StatsFile> list_stats_files(const std::string& dir) {
  std::vector<StatsFile> files;
  DIR* d = opendir(dir.c_str());
  if (!d) return files;
  constexpr size_t kPrefix = sizeof kFilePrefix - 1;
  while (const dirent* e = readdir(d)) {
    const char* digits = e->d_name + kPrefix;
    if (strncmp(e->d_name, kFilePrefix, kPrefix) != 0 || !*digits ||
        strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
      continue;
    const int pid = atoi(digits);
    if (pid > 0) files.push_back({stats_path(dir, pid), pid});
  }
  closedir(d);
  std::sort(files.begin(), files.end(),
            [](const StatsFile& a, const StatsFile& b) { return a.pid < b.pid; });
  return files;
}

bool is_stale(const Snapshot& s) {
  return s.state != kLive || liveness(s.pid, s.start_ticks) != Liveness::kLive;
}

}  // namespace ss::vma::stats
