#include "core/prov/registry.h"

#include <algorithm>
#include <cstring>

namespace ss::prov {

namespace {
// Constant-initialised: a registration made before this file's dynamic
// initialisers ran (the order across files is unspecified) is not lost.
constinit const Registration* g_head = nullptr;
}  // namespace

const char* family_name(Family family) {
  return family == Family::kConnection ? "connection" : "ring";
}

Registration::Registration(const Descriptor& descriptor) : descriptor_(descriptor), next_(g_head) {
  g_head = this;
}

std::vector<const Descriptor*> providers(Family family) {
  std::vector<const Descriptor*> out;
  for (const Registration* r = g_head; r; r = r->next_)
    if (r->descriptor_.family == family) out.push_back(&r->descriptor_);
  std::sort(out.begin(), out.end(),
            [](const Descriptor* a, const Descriptor* b) { return strcmp(a->name, b->name) < 0; });
  return out;
}

const Descriptor* find_provider(const char* name, Family family) {
  for (const Descriptor* d : providers(family))
    if (strcmp(d->name, name) == 0) return d;
  return nullptr;
}

}  // namespace ss::prov
