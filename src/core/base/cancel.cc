#include "core/base/cancel.h"

#include <pthread.h>

namespace ss {
namespace {

// The state the program had at the outermost edge, and whether the sleeps
// of the call under way may act on it.
thread_local int t_depth = 0;
thread_local int t_program_state = PTHREAD_CANCEL_ENABLE;
thread_local bool t_sleeps = true;

}  // namespace

NoCancelScope::NoCancelScope(bool sleeps) : old_sleeps_(t_sleeps) {
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state_);
  if (t_depth++ == 0) t_program_state = old_state_;
  t_sleeps = t_sleeps && sleeps;
}

NoCancelScope::~NoCancelScope() {
  t_sleeps = old_sleeps_;
  t_depth--;
  pthread_setcancelstate(old_state_, nullptr);
}

CancelPoint::CancelPoint() {
  if (t_depth > 0 && t_sleeps && t_program_state == PTHREAD_CANCEL_ENABLE)
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old_state_);
}

CancelPoint::~CancelPoint() {
  if (old_state_ >= 0) pthread_setcancelstate(old_state_, nullptr);
}

}  // namespace ss
