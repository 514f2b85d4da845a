// The calls that lock a process in (core/base/sandbox.h): a seccomp filter
// installed through prctl or through libc's syscall() (libseccomp's way)
// tells core, once it is in force, to move connections by read, write and
// poll alone. Both preloads export these.
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

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

SS_PRELOAD_EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (long& v : a) v = va_arg(ap, long);
  va_end(ap);
  const long rc = real().syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (rc >= 0 && number == SYS_seccomp &&
      (a[0] == SECCOMP_SET_MODE_FILTER || a[0] == SECCOMP_SET_MODE_STRICT))
    ss::sandbox::enter();
  return rc;
}
