// The ports whose TCP connections the preload leaves to the kernel
// (setting "kernel_ports" of component "preload"): a list such as
// "22,5432,8000-8099". Parsed on first use; a bad list is warned about,
// naming it, and the default (no port) is used.
#pragma once
#include <bitset>
#include <optional>
#include <string_view>

namespace ss::rs {

using PortSet = std::bitset<65536>;

// The set a list names, or nothing when an entry is not a port (1-65535)
// or a range of them (low-high, low <= high). Spaces around entries are
// allowed; an empty list is the empty set.
std::optional<PortSet> parse_port_list(std::string_view list);

}  // namespace ss::rs
