#include "vma_preload/epoll_face.h"

#include "vma_preload/mux.h"

namespace ss::vma::preload {

const interpose::EpollFace kEpollFace{"libvma", mux_timing};

}  // namespace ss::vma::preload
