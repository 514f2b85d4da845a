// The preloads' own calls reach libc. A preload's wrappers stand in for
// libc's names in the whole process, its own code and the libraries it
// calls included (librsocket on its kernel sockets, core's poll over the
// kernel part of a set, the epoll glue on its kernel set): while an
// OwnCalls lives on a thread, every wrapper hands the call to libc.
#pragma once

namespace ss::interpose {

extern thread_local int t_own_calls;  // depth

class OwnCalls {
 public:
  OwnCalls() { ++t_own_calls; }
  ~OwnCalls() { --t_own_calls; }
  OwnCalls(const OwnCalls&) = delete;
  OwnCalls& operator=(const OwnCalls&) = delete;
};

inline bool in_own_call() { return t_own_calls != 0; }

}  // namespace ss::interpose
