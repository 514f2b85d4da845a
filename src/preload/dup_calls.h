// dup of a connection: the rsocket face of the shared duplicates
// (interpose/dup_share.h, which says what a "held" number is): every
// descriptor of one rsocket shares it until the last is closed; the
// number of a closed rsocket whose close lingers in the background stays
// held until librsocket closes it.
#pragma once

namespace ss::preload::dups {

// A duplicate of rsocket `fd`: at `at` exactly (dup2/dup3: free or not
// ours), else at the lowest free number >= `at` (dup, F_DUPFD); the new
// number or -1 and errno. `cloexec`: the program's FD_CLOEXEC on it.
int dup_rsocket(int fd, int at, bool exact, bool cloexec);

// close() of rsocket `fd` when other descriptors share its connection:
// true with *rc set when handled here; false when fd is its rsocket's
// only descriptor (the caller rcloses it).
bool close_shared(int fd, int* rc);

// Whether closing rsocket `fd` ends its connection: no other descriptor
// of the program names it.
bool last_descriptor(int fd);

// A duplicate of listener `fd` (dup, dup2/dup3, F_DUPFD[_CLOEXEC]) with
// the kernel's close-on-exec rule (`cloexec`): every number shares the
// listener's Entry, which acts through a kernel descriptor of its own, so
// each number is the program's to free and the listener ends with the
// last.
int dup_listener(int fd, int at, bool exact, bool cloexec);

// close() of listener `fd`: true with *rc set when another number still
// names the listener (fd forgotten and closed); false for its last number.
bool close_listener_shared(int fd, int* rc);

// The numbers other than `fd` naming the same socket leave the table (the
// socket is the kernel's from now on, with every number).
void forget_duplicates(int fd);

// Whether `fd` is a held number.
bool held(int fd);

// rclose of rsocket `fd` (its only descriptor), holding the number while
// the close lingers.
int close_last(int fd);

// librsocket's close of `fd` (a number it held when a lingering close
// ends): freed and released together.
int close_released(int fd);

}  // namespace ss::preload::dups
