// What libslipstream exports. Core is built with -fvisibility=hidden and its
// version script (libslipstream.map.in) puts every export under one private
// node stamped with the release, so only what carries SS_API is visible to
// the faces and tools, and a face built against another release fails at
// load ("version `SLIPSTREAM_PRIVATE_x' not found") instead of misbehaving.
// Mark a function when a face, a tool or the conformance suite calls it
// (tests/ext/abi.sh checks each export has such a user); mark a whole class
// only when its vtable or typeinfo must cross the boundary.
#pragma once

#define SS_API __attribute__((visibility("default")))
