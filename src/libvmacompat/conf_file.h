// The process's libvma.conf: read from VMA_CONFIG_FILE (default
// ${sysconfdir}/libvma.conf) on first use and asked with the program's
// short name and VMA_APPLICATION_ID. Safe from any thread; not for the
// data path (a mutex guards it).
#pragma once
#include "core/base/api.h"
#include <sys/socket.h>

#include "libvmacompat/rules.h"

namespace ss::vma {

// The transport for a socket in `role` with these addresses (either may be
// null when the role has none; see RuleSet::decide).
SS_API Transport conf_transport(Role role, const sockaddr* local, socklen_t local_len,
                                const sockaddr* remote, socklen_t remote_len);

// Whether socket() makes a kernel socket (IPPROTO_TCP / IPPROTO_UDP; see
// RuleSet::at_socket).
SS_API Transport conf_socket_transport(int protocol);

// The Extra API's add_conf_rule: one `use` rule put in front of the rules
// read from the file. 0, or -1 with errno EINVAL when `rule` is null or not
// a rule.
SS_API int add_conf_rule(const char* rule);

// Reads the file again (after a settings reload), dropping runtime rules.
void reload_conf();

}  // namespace ss::vma
