// The provider registry. Each provider describes itself with a Descriptor
// from its own folder, registered by a static Registration object there
// when libslipstream loads; nothing else names the providers. Lookups are
// by name (SLIPSTREAM_PROVIDER) and walks are ordered by the family's own
// rules (connection.h: preference), never by registration order.
#pragma once
#include "core/base/api.h"
#include <cstdint>
#include <vector>

namespace ss::prov {

enum class Family : uint8_t { kConnection, kRing };
const char* family_name(Family family);

// Each family's operations, defined with its interface: connection.h, ring.h.
struct ConnectionOps;
struct RingOps;

struct Descriptor {
  const char* name;  // unique within its family; what SLIPSTREAM_PROVIDER names
  Family family;
  const ConnectionOps* connection = nullptr;  // kConnection
  const RingOps* ring = nullptr;              // kRing
};

// A static object of this type in a provider's file registers it. The list
// is built while the library's constructors run (one thread) and only read
// afterwards.
class Registration {
 public:
  SS_API explicit Registration(const Descriptor& descriptor);
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  friend std::vector<const Descriptor*> providers(Family family);
  const Descriptor& descriptor_;
  const Registration* next_;
};

// Every provider of `family`, ordered by name.
std::vector<const Descriptor*> providers(Family family);
// The provider of `family` called `name` (case-sensitive), or nullptr.
SS_API const Descriptor* find_provider(const char* name, Family family);

}  // namespace ss::prov
