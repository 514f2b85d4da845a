// Whether this process can make a few more descriptors now: a step that
// needs several (a verbs connection: an rdma_cm channel, an epoll set, a
// completion channel, the rsocket's name) asks first, so that a shortage
// leaves the work undone (a connection request queued, as in a kernel
// backlog) instead of failing it half-way.
#pragma once
#include "core/base/api.h"

namespace ss {

// 0 when `n` descriptor numbers are free below RLIMIT_NOFILE (with
// `with_reserve`, a listener's step: counting the reserve's, below, given
// back for the step when they make up the difference); -EMFILE when not.
// The probe makes no descriptor (a probe that did would take the last
// free numbers from another thread's socket() or eventfd for a moment: a
// passing EMFILE there). The system-wide limit (ENFILE) is not seen, and
// another thread may take the numbers meanwhile: the step itself must
// still handle the shortage. Once locked in (sandbox.h): 0, no probe.
int descriptor_shortage(int n = 1, bool with_reserve = false);

// The reserve: numbers the library keeps taken (a memfd of its own and
// duplicates, at most `kReserveMost`) while the process is out of
// descriptors, so that its own failed or finished steps never hand the
// program a number: out, the program stays out (its socket() EMFILE, as
// beside a kernel backlog) until it closes some of its own.
constexpr int kReserveMost = 8;
// After a listener's step failed (its descriptors closed) or it dropped a
// waiting connection: takes the free numbers into the reserve while the
// process is out (at most kReserveMost free).
SS_API void reserve_free();
// After every step that asked with_reserve, however it ended (the step
// ends there for release_number too): when the
// probe gave the reserve, takes the free numbers back as reserve_free
// does (the process was out: what the step left or gave back on failure
// stays taken); nothing when it gave none. A probe or a take that finds
// more free than the reserve holds at most ends it (the program made
// room).
SS_API void reserve_again();
// A listener's start: the reserve's file, made while the process has
// room and kept (one descriptor of the library's, close-on-exec), so that
// release_number always has a file to put in a number's place.
SS_API void reserve_prepare();
// A listener's end: the numbers the reserve keeps for listeners' steps
// are the program's again (its file stays, for the next listener).
SS_API void reserve_end();
// Closes a descriptor of the library's own (a step's memfd once mapped or
// passed, a refused connection's socket). Inside a listener's step that
// began with more room than it needs, while no other number below the
// limit is free (the program ran out meanwhile), the number stays taken
// instead: the reserve's file is put over it by dup3, which leaves no
// moment in which the program's socket() could get it. Elsewhere, and
// when the step's own descriptors were what filled the table, a close.
SS_API void release_number(int fd);

}  // namespace ss
