// The provider registry and selection (registry.h, selection.h): which
// connection providers registered, that SLIPSTREAM_PROVIDER's choices are
// exactly those, the order auto walks them in, and what auto picks for a
// loopback peer. (That auto picks tcp for a peer in another network
// namespace is tests/ext/netns.sh's; the config layer's own warning for a
// bad value is base_config_test's ProviderEnum.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/config_core.h"
#include "core/prov/connection.h"
#include "core/prov/registry.h"
#include "core/prov/selection.h"
#include "tests/common/stderr_capture.h"
#include "tests/core/prov_fixture.h"

namespace ss::prov {
namespace {

std::vector<std::string> names(Family family) {
  std::vector<std::string> out;
  for (const Descriptor* d : providers(family)) out.push_back(d->name);
  return out;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(ProvRegistry, ListsTheConnectionProviders) {
  EXPECT_EQ(names(Family::kConnection), (std::vector<std::string>{"shm", "tcp", "verbs"}));
  for (const Descriptor* d : providers(Family::kConnection)) {
    SCOPED_TRACE(d->name);
    EXPECT_EQ(d->family, Family::kConnection);
    ASSERT_NE(d->connection, nullptr);
    EXPECT_EQ(d->ring, nullptr);
    EXPECT_NE(d->connection->probe, nullptr);
    EXPECT_NE(d->connection->create, nullptr);
    EXPECT_NE(d->connection->listen, nullptr);
    EXPECT_EQ(find_provider(d->name, Family::kConnection), d);
    EXPECT_EQ(find_provider(d->name, Family::kRing), nullptr) << "a name found in the wrong family";
  }
  EXPECT_EQ(find_provider("rdma", Family::kConnection), nullptr);
  EXPECT_STREQ(family_name(Family::kConnection), "connection");
  EXPECT_STREQ(family_name(Family::kRing), "ring");
}

// The setting accepts "auto" and the name of every connection provider,
// nothing else: a provider added without its name there (or a name left
// behind) would be unselectable or select nothing.
TEST(ProvRegistry, ProviderSettingNamesExactlyTheRegisteredProviders) {
  const config::Setting* s = config::core::table.row(int(config::core::Id::kProvider));
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->type, config::Type::kEnum);
  std::vector<std::string> choices;
  std::string all = s->str_def;
  for (size_t at = 0, bar; at <= all.size(); at = bar + 1) {
    bar = all.find('|', at);
    if (bar == std::string::npos) bar = all.size();
    choices.push_back(all.substr(at, bar - at));
  }
  std::vector<std::string> want = names(Family::kConnection);
  want.insert(want.begin(), "auto");
  std::sort(choices.begin(), choices.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(choices, want);
}

// auto's preference: verbs, then shm, then tcp, whatever order the
// providers registered in; tcp's probe takes any peer, shm's a local one.
TEST(ProvRegistry, AutoPrefersVerbsThenShmThenTcp) {
  const Descriptor* verbs = find_provider("verbs", Family::kConnection);
  const Descriptor* shm = find_provider("shm", Family::kConnection);
  const Descriptor* tcp = find_provider("tcp", Family::kConnection);
  ASSERT_TRUE(verbs && shm && tcp);
  EXPECT_GT(verbs->connection->preference, shm->connection->preference);
  EXPECT_GT(shm->connection->preference, tcp->connection->preference);
  EXPECT_TRUE(tcp->connection->listens_always);
  EXPECT_FALSE(shm->connection->listens_always);
  EXPECT_FALSE(verbs->connection->listens_always);

  sockaddr_in loop{}, far{};
  loop.sin_family = far.sin_family = AF_INET;
  loop.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(inet_pton(AF_INET, "192.0.2.1", &far.sin_addr), 1);  // TEST-NET-1: never ours
  const Peer to_loop{-1, reinterpret_cast<sockaddr*>(&loop), sizeof loop};
  const Peer to_far{-1, reinterpret_cast<sockaddr*>(&far), sizeof far};
  EXPECT_EQ(shm->connection->probe(to_loop, false), 0);
  EXPECT_NE(shm->connection->probe(to_far, false), 0);
  EXPECT_EQ(tcp->connection->probe(to_loop, false), 0);
  EXPECT_EQ(tcp->connection->probe(to_far, false), 0);
}

// A loopback listener made with one SLIPSTREAM_PROVIDER, dialled through
// selection with another: which provider selection picked.
class ProvSelection : public ::testing::Test {
 protected:
  void TearDown() override {
    act_.reset();
    if (asock_ >= 0) ::close(asock_);
  }

  // nullptr: SLIPSTREAM_PROVIDER unset (auto).
  void Listen(const char* provider) {
    env_.use(provider);
    ASSERT_NO_FATAL_FAILURE(lis_.open());
  }

  std::string Dial() {
    asock_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    EXPECT_GE(asock_, 0);
    int rc = create_active({asock_, lis_.sa(), lis_.addr_len}, &act_);
    EXPECT_EQ(rc, 0) << strerror(-rc);
    return act_ ? act_->provider_name() : "";
  }

  sstest::ProviderEnv env_;

 private:
  sstest::LoopbackListener lis_;
  std::unique_ptr<Endpoint> act_;
  int asock_ = -1;
};

TEST_F(ProvSelection, AutoPicksShmForALoopbackPeer) {
  ASSERT_NO_FATAL_FAILURE(Listen(nullptr));
  EXPECT_EQ(Dial(), "shm");
}

// shm's probe accepts the loopback peer but its listener has no
// rendezvous: auto goes on down its order to tcp.
TEST_F(ProvSelection, AutoFallsBackToTcpWhenShmCannotConnect) {
  ASSERT_NO_FATAL_FAILURE(Listen("tcp"));
  env_.use(nullptr);
  EXPECT_EQ(Dial(), "tcp");
}

TEST_F(ProvSelection, NamedProviderIsTheOneUsed) {
  ASSERT_NO_FATAL_FAILURE(Listen(nullptr));
  env_.use("tcp");
  EXPECT_EQ(Dial(), "tcp");
}

// An unknown name: the config layer's one warning names it and the default
// used, selection adds none of its own and behaves as auto.
TEST_F(ProvSelection, UnknownProviderWarnsOnceAndSelectsAsAuto) {
  ASSERT_NO_FATAL_FAILURE(Listen(nullptr));
  std::string picked, err;
  {
    sstest::StderrCapture cap;
    env_.use("rdma");
    picked = Dial();
    err = cap.text();
  }
  EXPECT_EQ(picked, "shm");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("\"rdma\""), std::string::npos) << err;
  EXPECT_NE(err.find("using default auto"), std::string::npos) << err;
}

}  // namespace
}  // namespace ss::prov
