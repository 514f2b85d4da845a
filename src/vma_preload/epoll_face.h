// libvma.so's face of the shared epoll glue (interpose/epoll_glue.h): its
// name in log lines and VMA_SELECT_POLL's busy phase (mux_timing).
#pragma once
#include "interpose/epoll_glue.h"

namespace ss::vma::preload {

extern const interpose::EpollFace kEpollFace;

}  // namespace ss::vma::preload
