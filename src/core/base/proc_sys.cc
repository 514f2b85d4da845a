#include "core/base/proc_sys.h"

#include <cstdio>

namespace ss {

long proc_sys_number(const char* path, int field, long dflt) {
  char full[128];
  if (snprintf(full, sizeof full, "/proc/sys/%s", path) >= static_cast<int>(sizeof full))
    return dflt;
  FILE* f = fopen(full, "re");
  if (!f) return dflt;
  long v = dflt;
  for (int i = 0; i <= field; i++)
    if (fscanf(f, "%ld", &v) != 1) {
      v = dflt;
      break;
    }
  fclose(f);
  return v;
}

size_t accept_queue_limit(int backlog) {
  static const long somaxconn = proc_sys_number("net/core/somaxconn", 0, 4096);
  const long cap = somaxconn > 0 ? somaxconn : 4096;
  return static_cast<size_t>(backlog < 0 || backlog > cap ? cap : backlog) + 1;
}

}  // namespace ss
