#include "core/base/library_thread.h"

namespace ss {

namespace {
thread_local bool t_library = false;
}  // namespace

void mark_library_thread() { t_library = true; }
bool in_library_thread() { return t_library; }

}  // namespace ss
