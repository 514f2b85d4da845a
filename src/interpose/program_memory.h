// Memory a program names in a call the preload serves itself (a receive's
// buffers, its address and message header): a bad pointer must cost the
// program the kernel's EFAULT, never a crash. Where a span was not proven
// yet, the access goes through process_vm_writev/process_vm_readv on the
// process itself, which fail with EFAULT as the kernel's own copy does;
// proven spans (whole pages) are remembered per thread, so a program that
// receives into the same buffers pays a memcpy. Where those calls are
// refused (a seccomp filter, ENOSYS) the access is plain, as before.
// Not seen: memory unmapped or made read-only after a call proved it.
#pragma once
#include <cstddef>

namespace ss::interpose {

// Copies n bytes from src (ours) to dst (the program's): 0, or -EFAULT
// with nothing promised about dst.
int copy_to_program(void* dst, const void* src, size_t n) noexcept;
// Whether the program's [p, p+n) can be written (its bytes are written
// back as they are: for headers the call fills in).
bool program_writable(void* p, size_t n) noexcept;
// Whether the program's [p, p+n) can be read.
bool program_readable(const void* p, size_t n) noexcept;
// Memory the preload lends the program (the rings' frames, which a
// zero-copy reader hands back to a send): taken as readable and writable
// without a check. Up to 16 regions; later ones are checked as any other.
void trust_region(const void* base, size_t len) noexcept;

// While one lives, this thread's calls name only the preload's own memory
// (sendfile's buffer passed to the preload's send): nothing is checked.
class OwnMemoryScope {
 public:
  OwnMemoryScope() noexcept;
  ~OwnMemoryScope();
  OwnMemoryScope(const OwnMemoryScope&) = delete;
  OwnMemoryScope& operator=(const OwnMemoryScope&) = delete;
};

}  // namespace ss::interpose
