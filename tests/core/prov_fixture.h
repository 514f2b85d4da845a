// Helpers of the provider tests: SLIPSTREAM_PROVIDER set for one test and
// restored after it, and a listener on a loopback port made through
// selection, as rlisten makes it.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "core/prov/connection.h"
#include "core/prov/selection.h"

namespace sstest {

class ProviderEnv {
 public:
  ProviderEnv() {
    const char* old = getenv("SLIPSTREAM_PROVIDER");
    had_ = old != nullptr;
    if (old) old_ = old;
  }
  ~ProviderEnv() { use(had_ ? old_.c_str() : nullptr); }
  ProviderEnv(const ProviderEnv&) = delete;
  ProviderEnv& operator=(const ProviderEnv&) = delete;

  // nullptr: unset (auto).
  static void use(const char* provider) {
    if (provider)
      setenv("SLIPSTREAM_PROVIDER", provider, 1);
    else
      unsetenv("SLIPSTREAM_PROVIDER");
    ss::config::reload();
  }

 private:
  bool had_ = false;
  std::string old_;
};

struct LoopbackListener {
  std::unique_ptr<ss::prov::Listener> listener;
  int sock = -1;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;

  LoopbackListener() = default;
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;
  ~LoopbackListener() { close(); }

  // With the current SLIPSTREAM_PROVIDER; call under ASSERT_NO_FATAL_FAILURE.
  void open(int backlog = 8) {
    sock = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(sock, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(ss::prov::create_listener(sock, &listener, backlog), 0);
    ASSERT_TRUE(listener);
    addr_len = sizeof addr;
    ASSERT_EQ(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &addr_len), 0);
  }
  void close() {
    listener.reset();
    if (sock >= 0) ::close(sock);
    sock = -1;
  }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

}  // namespace sstest
