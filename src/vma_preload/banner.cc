#include "vma_preload/banner.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <string>

#include "core/base/log.h"
#include "libvmacompat/settings.h"

namespace ss::vma::preload {
namespace {

constexpr const char* kRule =
    "---------------------------------------------------------------------------";

// /proc/self/cmdline with its NULs as spaces ("" when unreadable).
std::string command_line() {
  std::string out;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[1024];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0 && out.size() < 4096;) out.append(buf, n);
  close(fd);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out)
    if (c == '\0') c = ' ';
  return out;
}

}  // namespace

void print_banner() {
  using log::Level;
  SS_INFO("%s", kRule);
  SS_INFO("VMA_VERSION: %s Slipstream (libvma-compatible; UDP and TCP offloaded over AF_XDP)",
          PACKAGE_VERSION);
  if (log::enabled(Level::kInfo)) SS_INFO("Cmd Line: %s", command_line().c_str());
  if (log::enabled(Level::kDebug)) {
    const time_t now = time(nullptr);
    char when[64];
    SS_DEBUG("Current Time: %s", ctime_r(&now, when) ? when : "?");
    SS_DEBUG("Pid: %5d", static_cast<int>(getpid()));
    struct utsname u;
    if (uname(&u) == 0) {
      SS_DEBUG("System: %s", u.release);
      SS_DEBUG("Architecture: %s", u.machine);
      SS_DEBUG("Node: %s", u.nodename);
    }
    SS_DEBUG("%s", kRule);
  }
  config::Component& t = settings::table;
  for (int i = 0; i < t.count(); ++i) {
    const config::Setting* row = t.row(i);
    const Level level = t.source(i) == config::Source::kDefault ? Level::kDetails : Level::kInfo;
    if (!log::enabled(level)) continue;
    const std::string value = t.get_string(i);
    log::write(level, "%-30s %-26s [%s]", row->name, value.c_str(), row->env[0]);
  }
  SS_INFO("%s", kRule);
}

}  // namespace ss::vma::preload
