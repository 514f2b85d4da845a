// No exception crosses the C ABI (the project's rule): at each edge, the
// exception a call's work threw becomes the errno it stands for. One
// mapping for librsocket's edge() and the preloads' (interpose/edge.h).
#pragma once
#include <cerrno>
#include <new>
#include <stdexcept>
#include <system_error>

namespace ss {

// Inside a catch block, the errno of the exception being handled: out of
// memory (std::bad_alloc, or a length no allocation can hold) ENOMEM; a
// std::system_error (std::thread, std::mutex) its code; anything else EIO.
inline int current_exception_errno() noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (const std::length_error&) {
    return ENOMEM;
  } catch (const std::system_error& e) {
    return e.code().value() > 0 ? e.code().value() : EIO;
  } catch (...) {
    return EIO;
  }
}

}  // namespace ss
