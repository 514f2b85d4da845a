#include "core/net/frame_tx.h"

#include <cerrno>

namespace ss::net {

using mem::Buffer;

FrameTx::~FrameTx() {
  std::lock_guard lock(mu_);
  spare_.clear();
  held_.clear();
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

int FrameTx::put_locked(Buffer&& frame) {
  int took = queue_->tx(&frame, 1);
  if (took == 0) {  // full: let the device drain, take completions back, once
    kick_locked();
    reclaim_locked();
    took = queue_->tx(&frame, 1);
  }
  if (took < 0) return took;
  if (took == 0) return -EAGAIN;
  unkicked_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

int FrameTx::kick_locked() {
  unkicked_.store(0, std::memory_order_relaxed);
  return queue_->kick();
}

int FrameTx::send(Buffer&& frame) {
  std::lock_guard lock(mu_);
  if (const int err = put_locked(std::move(frame)); err < 0) return err;
  return kick_locked();
}

bool FrameTx::drain_held_locked() {
  while (!held_.empty()) {
    const int err = put_locked(std::move(held_.front()));
    if (err == -EAGAIN) return false;
    held_.pop_front();  // on the ring, or refused (a frame of no use: lost as on the wire)
    held_n_.fetch_sub(1, std::memory_order_relaxed);
  }
  return true;
}

int FrameTx::queue(Buffer&& frame) {
  std::lock_guard lock(mu_);
  if (drain_held_locked()) {
    const int err = put_locked(std::move(frame));
    if (err != -EAGAIN) {
      if (err < 0) return err;
      return unkicked_.load(std::memory_order_relaxed) >= kBurst ? kick_locked() : 0;
    }
  }
  if (held_.size() >= kHeldMax) return -EAGAIN;
  held_.push_back(std::move(frame));
  held_n_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void FrameTx::flush() {
  if (unkicked_.load(std::memory_order_relaxed) == 0 &&
      held_n_.load(std::memory_order_relaxed) == 0)
    return;
  std::lock_guard lock(mu_);
  drain_held_locked();
  if (unkicked_.load(std::memory_order_relaxed) > 0) kick_locked();
}

}  // namespace ss::net
