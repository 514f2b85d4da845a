// Whether this process can make a few more descriptors now: a step that
// needs several (a verbs connection: an rdma_cm channel, an epoll set, a
// completion channel, the rsocket's name) asks first, so that a shortage
// leaves the work undone (a connection request queued, as in a kernel
// backlog) instead of failing it half-way.
#pragma once

namespace ss {

// 0 when `n` descriptor numbers are free below RLIMIT_NOFILE; -EMFILE
// when not. The probe makes no descriptor (a probe that did would take
// the last free numbers from another thread's socket() or eventfd for a
// moment: a passing EMFILE there). The system-wide limit (ENFILE) is not
// seen, and another thread may take the numbers meanwhile: the step
// itself must still handle the shortage. Once locked in (sandbox.h): 0,
// no probe.
int descriptor_shortage(int n = 1);

}  // namespace ss
