#include "core/net/tcp/isn.h"

#include <sodium.h>

#include <cstring>

#include "core/base/log.h"

namespace ss::net::tcp {

SecretHash::SecretHash() {
  // sodium_init is idempotent and thread-safe; without it randombytes_buf
  // still reads the kernel's getrandom().
  if (sodium_init() < 0) SS_WARN("tcp: libsodium did not initialise; keys from getrandom");
  randombytes_buf(key_, sizeof key_);
}

uint64_t SecretHash::operator()(const FourTuple& t, uint64_t extra) const {
  static_assert(crypto_shorthash_KEYBYTES == sizeof key_);
  unsigned char in[2 * 16 + 2 * 2 + 1 + 8];
  size_t n = 0;
  std::memcpy(in + n, t.local.bytes, 16);
  n += 16;
  std::memcpy(in + n, t.remote.bytes, 16);
  n += 16;
  std::memcpy(in + n, &t.local_port, 2);
  n += 2;
  std::memcpy(in + n, &t.remote_port, 2);
  n += 2;
  in[n++] = static_cast<unsigned char>(t.local.family);
  std::memcpy(in + n, &extra, 8);
  n += 8;
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, in, n, key_);
  uint64_t h;
  std::memcpy(&h, out, sizeof h);
  return h;
}

}  // namespace ss::net::tcp
