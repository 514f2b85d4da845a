// An rsocket carried to another image of the program: across exec
// (exec_hook.cc, in a memfd the exec keeps open) or to another process
// in a message (pass_rights.cc, SCM_RIGHTS). Each is a Record, its
// numbers and its state (librsocket's exec hand-over), built back by
// rebuild() where it arrives.
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <vector>

namespace ss::preload {

// What a record is: a connection at the program's numbers, a listener,
// or a connection queued for accept on the listener before it.
enum Kind : int { kConnection, kListener, kQueued };

// One rsocket or listener, followed by its numbers and, for a
// connection, its state.
struct Record {
  int kind;
  int own;  // the descriptor it was made at (its transport; a listener's: its first number)
  int domain;
  sockaddr_storage name;  // its local name (a reset one still answers it)
  socklen_t name_len;
  int carried;  // 1: a state follows; 0: reset in the new image
  int keep[4];  // descriptors of its transport, left open too
  int nkeep;
  int numbers;  // the program's numbers that follow (int each)
  uint64_t state_len;
  int backlog;  // kListener: the program's, and its O_NONBLOCK
  int nonblock;
  int aside;  // not carried: another process goes on with it (ss_rspreload_exec_aside)
};

// The records' memfd written whole (false: short), and read whole (at
// most `max` bytes; false: empty, longer, or short).
bool write_bytes(int fd, const std::vector<uint8_t>& bytes);
bool read_bytes(int fd, std::vector<uint8_t>* in, size_t max);

// A record's own descriptor and those it kept open, close-on-exec again
// as every rsocket's kernel descriptor.
void close_on_exec_again(const Record& r);

// One connection record built back: the rsocket at its own number, its
// numbers sharing it, close-on-exec again; one that was not carried, or
// whose state cannot be built back, a reset connection there. The n
// descriptors the state names at from[i] are now at to[i] (a passed
// connection's; an exec keeps every number: n 0). `where` ends the log
// lines ("after exec"). True when the state was built back.
bool rebuild(const Record& r, const std::vector<int>& numbers, const uint8_t* state,
             const char* where, const int* from = nullptr, const int* to = nullptr, int n = 0);

}  // namespace ss::preload
