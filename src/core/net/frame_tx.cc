#include "core/net/frame_tx.h"

#include <cerrno>

namespace ss::net {

using mem::Buffer;

FrameTx::~FrameTx() {
  std::lock_guard lock(mu_);
  spare_.clear();
}

void FrameTx::reclaim_locked() {
  Buffer done[32];
  int n;
  while ((n = queue_->complete(done, 32)) > 0)
    for (int i = 0; i < n; i++)
      if (spare_.size() < kSpare) spare_.push_back(std::move(done[i]));
  // the rest of done[] is released as it is reused or goes out of scope
}

void FrameTx::reap() {
  std::lock_guard lock(mu_);
  reclaim_locked();
}

Buffer FrameTx::take() {
  {
    std::lock_guard lock(mu_);
    reclaim_locked();
    if (!spare_.empty()) {
      Buffer b = std::move(spare_.back());
      spare_.pop_back();
      // Back to a fresh frame's view: headroom in front.
      if (b.set_view(pool_->headroom(), 0) == 0) return b;
    }
  }
  return pool_->get();
}

void FrameTx::keep(Buffer&& frame) {
  std::lock_guard lock(mu_);
  if (spare_.size() < kSpare) spare_.push_back(std::move(frame));
}

int FrameTx::send(Buffer&& frame) {
  std::lock_guard lock(mu_);
  int took = queue_->tx(&frame, 1);
  if (took == 0) {  // full: let the device drain, take completions back, once
    queue_->kick();
    reclaim_locked();
    took = queue_->tx(&frame, 1);
  }
  if (took < 0) return took;
  if (took == 0) return -EAGAIN;
  return queue_->kick();
}

}  // namespace ss::net
