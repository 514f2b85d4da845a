// The calls that lock a process in (core/base/sandbox.h): a seccomp filter
// installed through prctl or through libc's syscall() (libseccomp's way,
// syscall_calls.cc) tells core, once it is in force, to move connections
// by read, write and poll alone. Both preloads export these.
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <cstdarg>

#include "core/base/sandbox.h"
#include "interpose/export.h"
#include "interpose/real.h"

using ss::interpose::real;

SS_PRELOAD_EXPORT int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a[4];
  for (unsigned long& v : a) v = va_arg(ap, unsigned long);
  va_end(ap);
  const int rc = real().prctl(option, a[0], a[1], a[2], a[3]);
  if (rc == 0 && option == PR_SET_SECCOMP) ss::sandbox::enter();
  return rc;
}
