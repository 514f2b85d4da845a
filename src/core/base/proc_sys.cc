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

}  // namespace ss
