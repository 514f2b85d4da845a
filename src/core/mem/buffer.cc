#include "core/mem/buffer.h"

#include "core/mem/slab.h"

namespace ss::mem {

void Buffer::release() {
  detail::BufDesc* d = d_;
  d_ = nullptr;
  // acq_rel: every holder's writes happen-before the buffer's next owner.
  if (d->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) d->slab->pool->put(d);
}

}  // namespace ss::mem
