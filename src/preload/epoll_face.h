// librspreload's face of the shared epoll glue (interpose/epoll_glue.h):
// its name in log lines and librsocket's busy phase and wake-up interval.
#pragma once
#include "interpose/epoll_glue.h"

namespace ss::preload {

extern const interpose::EpollFace kEpollFace;

}  // namespace ss::preload
