// Duplicates of a socket a preload keeps in the fd table (an rsocket, an
// offloaded UDP socket): every number of the program that names one
// object shares it until the last is closed, counted here per object.
// The object keeps the number it was made at (its kernel socket, which
// the face acts on), so when the program closes that number while a
// duplicate lives, the number stays open until the last close; so does a
// number a face still closes in the background (librsocket's lingering
// close). Such a number is "held": dup2/dup3 onto it fails with EBUSY
// (dup2(2)'s error for a number it cannot take yet) and close_range
// leaves it, so a face never acts on a number the program got back for
// something else. Shared by both preloads (one of them per process).
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "core/base/fd_table.h"

namespace ss::interpose::dups {

// The fork handlers that keep this file's lock whole in a fork child,
// registered once: at load, or earlier by a preload's constructor that
// starts threads with fork handlers of their own (an exec's connections
// built back), whose child handlers must run after ours.
void lock_around_fork();

// A duplicate of `fd` (an entry of `kind`): at `at` exactly (dup2/dup3:
// free, or not the preload's), else at the lowest free number >= `at`
// (dup, F_DUPFD); close-on-exec if `cloexec`. The new number shares fd's
// object in the table; the new number or -1 and errno. `acts_on_owner`:
// the face acts on the number the object was made at, so that number is
// held while duplicates live; false for an object that keeps a kernel
// descriptor of its own (librspreload's listener), whose numbers are
// all the program's to free.
int dup_entry(int fd, FdKind kind, int at, bool exact, bool cloexec, bool acts_on_owner = true);

// close() of `fd` (an entry of `kind`): true with *rc set when other
// numbers still share its object (fd forgotten; its number closed, or
// held when the face acts on it). False when fd is its object's last
// number, its entry still in the table: *own is the number the object
// was made at (fd's entry moved there and fd closed, when they differ;
// fd itself for an object the face does not act on by number), for the
// face to close as a socket with no duplicate.
bool close_shared(int fd, FdKind kind, int* rc, int* own);

// `fd` (an entry of `kind`) was closed behind the preload (a raw close
// system call) and the kernel gave the number out again: its entry goes
// and its object loses that number (the last: the object goes), nothing
// is closed.
void forget(int fd, FdKind kind);

// Whether closing `fd` (an entry of `kind`) ends its object: no other
// number of the program names it.
bool last_descriptor(int fd, FdKind kind);

// The object `fd` names is no longer a face's (librspreload's late
// fallback hands a connection to the kernel): its other numbers leave the
// table (the caller makes `fd` the kernel's), a held number of it is
// closed, and its group ends. The other numbers, now plain duplicates of
// fd's kernel descriptor.
std::vector<int> dissolve(int fd);

// The object of `kind` a held number `fd` stands for (the program closed
// it while a duplicate lives on, and the face acts on it still): named
// by one of its duplicates. Null when fd is not such a number.
std::shared_ptr<void> held_object(int fd, FdKind kind);

// Whether `fd` is a held number; hold() makes it one (before a face's
// close that ends in close_released()).
bool held(int fd);
void hold(int fd);

// The real close of `fd`, no longer held once it is freed (one step, as
// held() sees it: a thread the kernel gives the number finds it free).
int close_released(int fd);
// A held number its face closed by the system call itself (librsocket in
// a fork child's handler, ss_rspreload_fork_closed): no longer held.
void forget_held(int fd);

// The program's FD_CLOEXEC on number `fd` of a group (its kernel
// descriptor's may differ: an rsocket's stays close-on-exec): 1 or 0;
// -1 when fd is in no group or its flag was never set here.
int program_cloexec(int fd);
// Sets it (nothing when fd is in no group).
void set_program_cloexec(int fd, bool on);

// In a new image after exec: the program's `numbers` (open) name the
// object the table has at `owner` (an entry of `kind`) and share it;
// owner is held when it is not among them. 0 or -errno.
int regroup(int owner, const std::vector<int>& numbers, FdKind kind);

// close_range(2) over [first, last] that leaves held numbers and `keep`
// open.
int close_range_around(unsigned int first, unsigned int last, int flags, std::set<int> keep);

// A preload's close_range(2): the numbers in the range `ours` names are
// closed by `close_one` (as close() closes them: a socket's duplicates
// counted, its record dropped) and the kernel closes the rest around
// them and the held numbers (a number freed under a face would be closed
// again once reused). With CLOSE_RANGE_CLOEXEC only flags change.
int close_range_with(unsigned int first, unsigned int last, int flags,
                     const std::function<bool(int)>& ours,
                     const std::function<void(int)>& close_one);

// closefrom(3) over close_range_fn (the preload's close_range), else,
// without close_range in the kernel, close_fn on every number up to the
// limit, as glibc does.
void closefrom_with(int lowfd, int (*close_range_fn)(unsigned int, unsigned int, int),
                    int (*close_fn)(int));

}  // namespace ss::interpose::dups
