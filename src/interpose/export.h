// The names a preload stands in for are exported unversioned, as
// upstream's librspreload and libvma do: a program binds to them ahead of
// libc.
#pragma once
#define SS_PRELOAD_EXPORT extern "C" __attribute__((visibility("default")))
