// dup of a connection: every descriptor of one rsocket shares it until
// the last is closed. The rsocket keeps the number it was made at (its
// kernel socket, which librsocket acts on), so when the program closes
// that number while a duplicate lives, the number stays open until the
// last close; so does the number of a closed rsocket whose close lingers
// in the background (librsocket closes it when done). Such a number is
// "held": dup2/dup3 onto it fails with EBUSY (dup2(2)'s error for a
// number it cannot take yet) and close_range leaves it, so librsocket
// never closes a number the program got back for something else.
#pragma once
#include <set>

namespace ss::preload::dups {

// A duplicate of rsocket `fd`: at `at` exactly (dup2/dup3: free or not
// ours), else at the lowest free number >= `at` (dup, F_DUPFD); the new
// number or -1 and errno.
int dup_rsocket(int fd, int at, bool exact);

// close() of rsocket `fd` when other descriptors share its connection:
// true with *rc set when handled here; false when fd is its rsocket's
// only descriptor (the caller rcloses it).
bool close_shared(int fd, int* rc);

// Whether closing rsocket `fd` ends its connection: no other descriptor
// of the program names it.
bool last_descriptor(int fd);

// Whether `fd` is a held number.
bool held(int fd);

// rclose of rsocket `fd` (its only descriptor), holding the number while
// the close lingers.
int close_last(int fd);

// librsocket's close of `fd` (a number it held when a lingering close
// ends): freed and released together.
int close_released(int fd);

// close_range(2) over [first, last] that leaves held numbers and `skip`
// open.
int close_range_around(unsigned int first, unsigned int last, int flags, std::set<int> skip);

}  // namespace ss::preload::dups
