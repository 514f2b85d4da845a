#include "preload/carried_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/dup_share.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "preload/route.h"
#include "preload/stats.h"

namespace ss::preload {

bool write_bytes(int fd, const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = interpose::real().write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool read_bytes(int fd, std::vector<uint8_t>* in, size_t max) {
  struct stat st {};
  if (::fstat(fd, &st) || st.st_size <= 0 || static_cast<size_t>(st.st_size) > max) return false;
  in->resize(static_cast<size_t>(st.st_size));
  return pread(fd, in->data(), in->size(), 0) == static_cast<ssize_t>(in->size());
}

void close_on_exec_again(const Record& r) {
  interpose::real().fcntl(r.own, F_SETFD, FD_CLOEXEC);
  for (int i = 0; i < r.nkeep && i < 4; i++)
    interpose::real().fcntl(r.keep[i], F_SETFD, FD_CLOEXEC);
}

bool rebuild(const Record& r, const std::vector<int>& numbers, const uint8_t* state,
             const char* where, const int* from, const int* to, int n) {
  OwnCalls in;
  bool ok =
      r.carried && ss_rspreload_exec_restore(r.own, r.domain, state, r.state_len, from, to, n) == 0;
  if (r.carried && !ok)
    SS_WARN("librspreload: fd %d: the connection could not be built back %s (%s): reset", r.own,
            where, strerror(errno));
  if (!ok) {
    // The peer must see the end: nothing here will carry on its transport
    // (an endpoint built and dropped closed its own descriptors). Unless
    // another process goes on with it.
    if (!r.aside) interpose::real().shutdown(r.own, SHUT_RDWR);
    if (ss_rspreload_exec_lost(r.own, r.domain, reinterpret_cast<const sockaddr*>(&r.name),
                               r.name_len, r.aside))
      return false;  // a plain socket, then
  }
  if (ok) stats::count_rsocket(ss_rspreload_provider(r.own));
  if (const int rc = interpose::dups::regroup(r.own, numbers, FdKind::kRsocket))
    SS_WARN("librspreload: fd %d: its duplicates %s: %s", r.own, where, strerror(-rc));
  close_on_exec_again(r);
  for (int number : numbers) interpose::real().fcntl(number, F_SETFD, FD_CLOEXEC);
  return ok;
}

}  // namespace ss::preload
