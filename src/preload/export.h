// The names the preload stands in for are exported unversioned, as
// upstream's librspreload does: a program binds to them ahead of libc.
#pragma once
#define SS_PRELOAD_EXPORT extern "C" __attribute__((visibility("default")))
