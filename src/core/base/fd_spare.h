// Whether this process can make a few more descriptors now: a step that
// needs several (a verbs connection: an rdma_cm channel, an epoll set, a
// completion channel, the rsocket's name) asks first, so that a shortage
// leaves the work undone (a connection request queued, as in a kernel
// backlog) instead of failing it half-way.
#pragma once

namespace ss {

// 0 when `n` descriptors can be made now; -EMFILE or -ENFILE when not (the
// probe's descriptors are closed again at once). Another thread may take
// them meanwhile: the step itself must still handle the shortage.
int descriptor_shortage(int n = 1);

}  // namespace ss
