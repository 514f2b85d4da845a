#include "librsocket/conn_buffer.h"

#include <cerrno>

namespace ss::rs {

int ConnBuffer::alloc(size_t len, const char* name, prov::Endpoint* ep) {
  mem::PoolOptions o;
  o.frame_size = len;
  o.frames_per_chunk = 1;
  o.max_chunks = 1;
  o.backing = mem::Backing::kShared;  // shm hands it to the peer
  o.name = name;
  int rc = mem::Pool::create(o, &pool_);
  if (rc) return rc;
  reg_.set_endpoint(ep);
  const int idx = pool_->add_registrar(&reg_);
  if (idx < 0) return idx;
  buf_ = pool_->get();
  if (!buf_) return -ENOMEM;  // cannot happen: the one frame is free
  keys_ = buf_.reg(static_cast<size_t>(idx));
  return 0;
}

void ConnBuffer::free(bool endpoint_alive) {
  if (!endpoint_alive) reg_.set_endpoint(nullptr);
  buf_.reset();
  pool_.reset();  // deregisters the chunk
  reg_.set_endpoint(nullptr);
  keys_ = mem::RegHandle{};
}

}  // namespace ss::rs
