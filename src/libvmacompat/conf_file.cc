// Loading libvma.conf for the process. The file is read with raw system
// calls, so a preload's own open/read wrappers are never entered. A file
// that cannot be read leaves no rules (every socket offloaded, as libvma):
// a warning when VMA_CONFIG_FILE named it, an info line for the default.
#include "libvmacompat/conf_file.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "core/base/errno_guard.h"
#include "core/base/log.h"
#include "libvmacompat/settings.h"

extern char* program_invocation_short_name;

namespace ss::vma {
namespace {

// libvma.conf is a few kilobytes; a file past this is no configuration.
constexpr size_t kMaxConf = 1 << 20;
constexpr const char* kDefaultAppId = "VMA_DEFAULT_APPLICATION_ID";

long read_file(const char* path, std::string* out) {
  const long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return -errno;
  long ret = 0;
  char buf[4096];
  for (;;) {
    const long r = syscall(SYS_read, fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ret = -errno;
      break;
    }
    if (r == 0) break;
    if (out->size() + static_cast<size_t>(r) > kMaxConf) {
      ret = -EFBIG;
      break;
    }
    out->append(buf, static_cast<size_t>(r));
  }
  syscall(SYS_close, fd);
  return ret;
}

const char* program() { return program_invocation_short_name ? program_invocation_short_name : ""; }

// Never destroyed: a late caller after exit() still finds it.
constinit std::mutex g_mu;
RuleSet* g_rules = nullptr;  // guarded by g_mu
std::string* g_app_id = nullptr;

RuleSet& loaded() {
  if (g_rules) return *g_rules;
  auto* rules = new RuleSet;
  const std::string path = settings::get_string(settings::Id::kConfigFile);
  const std::string app_id = settings::get_string(settings::Id::kApplicationId);
  std::string text;
  if (const long r = read_file(path.c_str(), &text); r < 0) {
    char err[128];
    const char* why = strerror_r(static_cast<int>(-r), err, sizeof err);
    if (settings::table.source(settings::Id::kConfigFile) == config::Source::kEnv)
      SS_WARN("libvma.conf: cannot read %s (%s): no rules, every socket offloaded", path.c_str(),
              why);
    else
      SS_INFO("libvma.conf: cannot read %s (%s): no rules", path.c_str(), why);
  } else {
    rules->parse(text, path.c_str());
  }
  if (app_id != kDefaultAppId && !rules->any_section_matches(program(), app_id.c_str()))
    SS_WARN("libvma.conf: VMA_APPLICATION_ID %s matches no application-id section of %s",
            app_id.c_str(), path.c_str());
  g_app_id = new std::string(app_id);
  g_rules = rules;
  return *rules;
}

}  // namespace

Transport conf_transport(Role role, const sockaddr* local, socklen_t local_len,
                         const sockaddr* remote, socklen_t remote_len) {
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  const RuleSet& r = loaded();
  return r.decide(role, program(), g_app_id->c_str(), local, local_len, remote, remote_len);
}

Transport conf_socket_transport(int protocol) {
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  const RuleSet& r = loaded();
  return r.at_socket(protocol, program(), g_app_id->c_str());
}

int add_conf_rule(const char* rule) {
  bool ok = false;
  if (rule) {
    ErrnoGuard keep;
    std::lock_guard<std::mutex> lock(g_mu);
    ok = loaded().add_rule(rule);
  }
  if (ok) return 0;
  errno = EINVAL;
  return -1;
}

void reload_conf() {
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  delete g_rules;
  delete g_app_id;
  g_rules = nullptr;
  g_app_id = nullptr;
  loaded();
}

}  // namespace ss::vma
