// Plain values appended to, and read back from, a byte string: a state
// handed between processes of one program (the same build, the same
// layouts), never a wire format.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace ss {

template <class T>
void put_pod(std::vector<uint8_t>* out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

// Reads values in the order they were put; every read after one past the
// end fails (ok() false), leaving its value alone.
class PodReader {
 public:
  PodReader(const uint8_t* in, size_t len) : p_(in), end_(in + len) {}
  template <class T>
  bool get(T* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!ok_ || static_cast<size_t>(end_ - p_) < sizeof *v) return ok_ = false;
    memcpy(v, p_, sizeof *v);
    p_ += sizeof *v;
    return true;
  }
  // `n` bytes in place (valid while the input is), or null.
  const uint8_t* take(size_t n) {
    if (!ok_ || static_cast<size_t>(end_ - p_) < n) return (ok_ = false), nullptr;
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  const uint8_t* rest(size_t* n) const {
    *n = static_cast<size_t>(end_ - p_);
    return p_;
  }
  bool ok() const { return ok_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace ss
