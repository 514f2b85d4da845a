// ConnBuffer: one of a connection's buffers (rbuf, sbuf, the target table)
// on the core buffer model: the single frame of a pool of its own (one
// chunk, one frame of the buffer's size rounded up to a power of two),
// registered with the connection's endpoint alone through a
// prov::EndpointRegistrar; its keys come from the Buffer.
//
// A pool per buffer, not one per process: stream providers key memory per
// connection and shm hands a whole chunk's memfd to the peer, so a chunk
// must hold this connection's buffer only, and a process-wide pool would
// register every chunk with every connection. So memory and descriptors
// per connection stay those of a plain Region: one memfd, handed to the
// peer (shm, peer-written buffers) or closed at registration.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/prov/endpoint_registrar.h"

namespace ss::rs {

class ConnBuffer {
 public:
  // access: prov::kAccessLocal or kAccessRemoteWrite (written by the peer).
  explicit ConnBuffer(int access) : reg_(access) {}
  ConnBuffer(const ConnBuffer&) = delete;
  ConnBuffer& operator=(const ConnBuffer&) = delete;
  ~ConnBuffer() { free(false); }

  // At least len bytes (`name` shows in /proc/PID/maps), registered with
  // ep. 0 or -errno; on failure free() undoes what was done.
  int alloc(size_t len, const char* name, prov::Endpoint* ep);
  // Gives the memory back: deregistered from the endpoint alloc() was
  // given when endpoint_alive, left alone otherwise (gone, or kept for
  // another process after a fork: not ours to call).
  void free(bool endpoint_alive);

  uint8_t* data() const { return static_cast<uint8_t*>(buf_.data()); }
  uint32_t lkey() const { return keys_.keys.lkey; }
  uint32_t rkey() const { return keys_.keys.rkey; }

 private:
  // Declared in the order they are built; destroyed in reverse.
  prov::EndpointRegistrar reg_;
  std::unique_ptr<mem::Pool> pool_;
  mem::Buffer buf_;
  mem::RegHandle keys_{};
};

}  // namespace ss::rs
