// libvma.conf (reference §8): every rule form (addresses, prefixes, IPv6,
// ports, ranges, wildcards, the connect roles' second pair), comments,
// first-match, application-id sections and `*`, the decision at socket(),
// add_conf_rule, the installed default file's DNS rule, and errors naming
// their file and line while the rest of the file still counts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "libvmacompat/conf_file.h"
#include "libvmacompat/rules.h"
#include "tests/common/stderr_capture.h"

namespace ss::vma {
namespace {

using sstest::StderrCapture;

constexpr const char* kDefaultId = "VMA_DEFAULT_APPLICATION_ID";

// A socket address from "a.b.c.d" or an IPv6 text, and a port.
struct Addr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  Addr(const char* ip, int port) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
      in->sin_family = AF_INET;
      in->sin_port = htons(static_cast<uint16_t>(port));
      len = sizeof *in;
    } else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
      in6->sin6_family = AF_INET6;
      in6->sin6_port = htons(static_cast<uint16_t>(port));
      len = sizeof *in6;
    } else {
      ADD_FAILURE() << "bad test address " << ip;
    }
  }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
};

// The decision for a one-address role (local for server/receiver, remote
// for sender), program "prog" and the default id.
Transport one(const RuleSet& r, Role role, const char* ip, int port, const char* prog = "prog",
              const char* id = kDefaultId) {
  Addr a(ip, port);
  const bool local = role == Role::kTcpServer || role == Role::kUdpReceiver;
  return r.decide(role, prog, id, local ? a.sa() : nullptr, local ? a.len : 0,
                  local ? nullptr : a.sa(), local ? 0 : a.len);
}

// The decision for a connect role: remote and local.
Transport two(const RuleSet& r, Role role, const char* rip, int rport, const char* lip, int lport) {
  Addr rem(rip, rport), loc(lip, lport);
  return r.decide(role, "prog", kDefaultId, loc.sa(), loc.len, rem.sa(), rem.len);
}

RuleSet parsed(const std::string& text, int want_skipped = 0) {
  RuleSet r;
  StderrCapture cap;
  EXPECT_EQ(r.parse(text, "test.conf"), want_skipped) << cap.text();
  return r;
}

constexpr Transport kOs = Transport::kOs, kVma = Transport::kVma;

TEST(VmaRules, EmptyOffloadsEverything) {
  RuleSet r = parsed("");
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(one(r, Role::kTcpServer, "10.0.0.1", 80), kVma);
  EXPECT_EQ(r.at_socket(IPPROTO_UDP, "prog", kDefaultId), kVma);
}

TEST(VmaRules, CommentsAndBlankLines) {
  RuleSet r = parsed(
      "# a comment\n\n   \t\n  # indented comment\n"
      "application-id * *   # trailing comment\n"
      "use os tcp_server *:80 # and here\n");
  EXPECT_EQ(one(r, Role::kTcpServer, "10.0.0.1", 80), kOs);
  EXPECT_EQ(one(r, Role::kTcpServer, "10.0.0.1", 81), kVma);
}

TEST(VmaRules, AddressForms) {
  RuleSet r = parsed(
      "application-id * *\n"
      "use os udp_receiver 10.1.2.3:*\n"         // exact address
      "use os udp_receiver 192.168.0.0/16:*\n"   // prefix
      "use os udp_receiver 172.16.0.1/8:*\n"     // host bits ignored
      "use os udp_receiver 1.2.3.4/40:*\n"       // prefix > 32: 32
      "use os udp_receiver [2001:db8::]/32:*\n"  // IPv6 prefix
      "use os udp_receiver [fe80::1]:7\n");      // IPv6 exact
  EXPECT_EQ(one(r, Role::kUdpReceiver, "10.1.2.3", 1), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "10.1.2.4", 1), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "192.168.77.1", 1), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "192.169.0.1", 1), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "172.200.0.1", 1), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "173.0.0.1", 1), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.2.3.4", 1), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.2.3.5", 1), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "2001:db8:1::5", 1), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "2001:db9::5", 1), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "fe80::1", 7), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "fe80::1", 8), kVma);
  // An IPv4-mapped IPv6 socket address matches an IPv4 rule.
  EXPECT_EQ(one(r, Role::kUdpReceiver, "::ffff:10.1.2.3", 1), kOs);
}

TEST(VmaRules, PortForms) {
  RuleSet r = parsed(
      "use os tcp_server *:5001\n"
      "use os tcp_server *:6000-6010\n"
      "use os tcp_server 10.0.0.1:*\n"
      "use os tcp_server * : 7000\n");  // blanks inside the tuple
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 5001), kOs);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 5002), kVma);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 6000), kOs);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 6010), kOs);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 5999), kVma);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 6011), kVma);
  EXPECT_EQ(one(r, Role::kTcpServer, "10.0.0.1", 1), kOs);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 7000), kOs);
  // Rules sit in the roles they name: no tcp_server rule affects a client.
  EXPECT_EQ(one(r, Role::kUdpSender, "1.1.1.1", 5001), kVma);
}

TEST(VmaRules, ConnectRolesCompareRemoteThenLocal) {
  RuleSet r = parsed(
      "use os tcp_client 192.168.1.0/24:*:*:*\n"
      "use os tcp_client *:*:10.0.0.1:4000-4001\n"
      "use os udp_connect 9.9.9.9:53:*:*\n"
      "use os udp_sender 239.1.1.1:5000\n");
  EXPECT_EQ(two(r, Role::kTcpClient, "192.168.1.7", 80, "10.9.9.9", 1), kOs);
  EXPECT_EQ(two(r, Role::kTcpClient, "192.168.2.7", 80, "10.9.9.9", 1), kVma);
  EXPECT_EQ(two(r, Role::kTcpClient, "8.8.8.8", 80, "10.0.0.1", 4001), kOs);
  EXPECT_EQ(two(r, Role::kTcpClient, "8.8.8.8", 80, "10.0.0.1", 4002), kVma);
  EXPECT_EQ(two(r, Role::kUdpConnect, "9.9.9.9", 53, "10.0.0.1", 1), kOs);
  EXPECT_EQ(two(r, Role::kUdpConnect, "9.9.9.8", 53, "10.0.0.1", 1), kVma);
  EXPECT_EQ(one(r, Role::kUdpSender, "239.1.1.1", 5000), kOs);
  EXPECT_EQ(one(r, Role::kUdpSender, "239.1.1.1", 5001), kVma);
}

TEST(VmaRules, FirstMatchWins) {
  RuleSet r = parsed(
      "use vma udp_receiver *:5000\n"
      "use os udp_receiver *:*\n");
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 5000), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 5001), kOs);
  RuleSet s = parsed(
      "use os udp_receiver *:*\n"
      "use vma udp_receiver *:5000\n");
  EXPECT_EQ(one(s, Role::kUdpReceiver, "1.1.1.1", 5000), kOs);
}

TEST(VmaRules, LegacyTransports) {
  // `*` is upstream's ULP, served as vma; sdp and sa never match.
  RuleSet r = parsed(
      "use sdp tcp_server *:1\n"
      "use sa tcp_server *:1\n"
      "use * tcp_server *:1\n"
      "use os tcp_server *:*\n");
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 1), kVma);
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 2), kOs);
}

TEST(VmaRules, ApplicationIdSections) {
  RuleSet r = parsed(
      "application-id feed* B1\n"
      "use os udp_receiver *:1\n"
      "application-id feed_a *\n"
      "use os udp_receiver *:2\n"
      "application-id * *\n"
      "use os udp_receiver *:3\n");
  // Program and id both match section 1: only its rules count.
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 1, "feed_a", "B1"), kOs);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 2, "feed_a", "B1"), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 3, "feed_a", "B1"), kVma);
  // The default id matches only `*` sections: the second section first.
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 1, "feed_a", kDefaultId), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 2, "feed_a", kDefaultId), kOs);
  // Another program: only the `* *` section.
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 2, "other", kDefaultId), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 3, "other", kDefaultId), kOs);
  // An id of `*` in VMA_APPLICATION_ID matches every id.
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 1, "feedX", "*"), kOs);
  EXPECT_TRUE(r.any_section_matches("feed_a", "B1"));
  RuleSet only_b1 = parsed("application-id * B1\nuse os udp_receiver *:1\n");
  EXPECT_FALSE(only_b1.any_section_matches("prog", "B2"));
  EXPECT_EQ(one(only_b1, Role::kUdpReceiver, "1.1.1.1", 1, "prog", "B2"), kVma);
  // An integer id, and a section named twice gathers both parts' rules.
  RuleSet again = parsed(
      "application-id p 7\nuse os udp_receiver *:1\n"
      "application-id q *\n"
      "application-id p 7\nuse os udp_receiver *:2\n");
  EXPECT_EQ(again.sections().size(), 2u);
  EXPECT_EQ(one(again, Role::kUdpReceiver, "1.1.1.1", 2, "p", "7"), kOs);
}

TEST(VmaRules, AtSocketNeedsBothListsOnTheKernel) {
  RuleSet both = parsed("use os udp_receiver *:*\nuse os udp_sender *:*\n");
  EXPECT_EQ(both.at_socket(IPPROTO_UDP, "prog", kDefaultId), kOs);
  EXPECT_EQ(both.at_socket(IPPROTO_TCP, "prog", kDefaultId), kVma);
  RuleSet half = parsed("use os udp_receiver *:*\n");
  EXPECT_EQ(half.at_socket(IPPROTO_UDP, "prog", kDefaultId), kVma);
  // A specific vma rule before the wildcard os rule keeps the socket.
  RuleSet specific = parsed(
      "use vma udp_receiver *:5000\nuse os udp_receiver *:*\n"
      "use os udp_sender *:*\n");
  EXPECT_EQ(specific.at_socket(IPPROTO_UDP, "prog", kDefaultId), kVma);
  RuleSet tcp = parsed("use os tcp_server *:*\nuse os tcp_client *:*:*:*\n");
  EXPECT_EQ(tcp.at_socket(IPPROTO_TCP, "prog", kDefaultId), kOs);
}

TEST(VmaRules, AddRuleGoesInFront) {
  RuleSet r = parsed("application-id * *\nuse os udp_receiver *:*\n");
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 9), kOs);
  EXPECT_TRUE(r.add_rule("use vma udp_receiver *:9"));
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 9), kVma);
  EXPECT_EQ(one(r, Role::kUdpReceiver, "1.1.1.1", 10), kOs);
  RuleSet none;
  EXPECT_TRUE(none.add_rule("use os tcp_server *:22"));  // creates `* *`
  EXPECT_EQ(one(none, Role::kTcpServer, "1.1.1.1", 22), kOs);
  EXPECT_FALSE(none.add_rule("application-id * *"));
  EXPECT_FALSE(none.add_rule("use os tcp_server *:22\nuse os tcp_server *:23"));
  EXPECT_FALSE(none.add_rule("use os tcp_server 300.1.1.1:22"));
  EXPECT_FALSE(none.add_rule(""));
  EXPECT_EQ(one(none, Role::kTcpServer, "1.1.1.1", 23), kVma);
}

TEST(VmaRules, LogStatementsAreAccepted) {
  parsed("log destination syslog min-level 9\nlog destination yfile vma.log\nlog\n");
  parsed("log destination stderr\nlog min-level x\n", 2);
}

TEST(VmaRules, EachErrorNamesItsLineAndTheRestCounts) {
  const char* bad[] = {
      "use os tcp_server *",            // no port
      "use os tcp_server 1.2.3:80",     // bad IPv4
      "use os tcp_server 1.2.3.4/:80",  // prefix missing
      "use os tcp_server [::1:80",      // unclosed IPv6
      "use os tcp_server [zz]:80",      // bad IPv6
      "use os tcp_server *:70000",      // port out of range
      "use os tcp_server *:90-80",      // reversed range
      "use os tcp_server *:80-",        // range end missing
      "use os tcp_server *:80:*",       // second pair without a port
      "use os tcp_server *:80x",        // junk after the tuple
      "use tcp tcp_server *:80",        // bad transport
      "use os tcp_srv *:80",            // bad role
      "use os tcp_server",              // no tuple
      "application-id onlyone",         // missing id
      "application-id a b c",           // one word too many
      "frobnicate *:80",                // no such statement
      "USE os tcp_server *:80",         // keywords are case-sensitive
  };
  std::string text = "application-id * *\n";
  for (const char* b : bad) text += std::string(b) + "\nuse os udp_receiver *:1\n";
  RuleSet r;
  StderrCapture cap;
  const int skipped = r.parse(text, "/etc/test.conf");
  const std::string err = cap.text();
  const int n = static_cast<int>(sizeof bad / sizeof bad[0]);
  EXPECT_EQ(skipped, n) << err;
  for (int i = 0; i < n; ++i) {
    const std::string where = "/etc/test.conf:" + std::to_string(2 + 2 * i) + ": ";
    EXPECT_NE(err.find(where), std::string::npos) << bad[i] << "\n" << err;
  }
  // The good lines between them all count.
  EXPECT_EQ(r.sections().size(), 1u);
  EXPECT_EQ(r.sections()[0].rules[int(Role::kUdpReceiver)].size(), size_t(n));
  EXPECT_EQ(one(r, Role::kTcpServer, "1.1.1.1", 80), kVma);
}

// The process's set: VMA_CONFIG_FILE, VMA_APPLICATION_ID, add_conf_rule.
class VmaConfFile : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("VMA_CONFIG_FILE");
    unsetenv("VMA_APPLICATION_ID");
    config::reload();
    StderrCapture quiet;
    reload_conf();
  }
  void use(const std::string& path) {
    setenv("VMA_CONFIG_FILE", path.c_str(), 1);
    config::reload();
    reload_conf();
  }
};

TEST_F(VmaConfFile, InstalledDefaultSendsDnsToTheKernel) {
  use(std::string(SRCDIR) + "/conf/libvma.conf");
  Addr dns("192.0.2.53", 53), local("10.0.0.2", 40000), other("192.0.2.53", 5353);
  EXPECT_EQ(conf_transport(Role::kUdpConnect, local.sa(), local.len, dns.sa(), dns.len), kOs);
  EXPECT_EQ(conf_transport(Role::kUdpConnect, local.sa(), local.len, other.sa(), other.len), kVma);
  EXPECT_EQ(conf_transport(Role::kUdpReceiver, local.sa(), local.len, nullptr, 0), kVma);
  EXPECT_EQ(conf_socket_transport(IPPROTO_UDP), kVma);
}

TEST_F(VmaConfFile, AddConfRule) {
  use(std::string(SRCDIR) + "/conf/libvma.conf");
  Addr local("10.0.0.2", 6000);
  EXPECT_EQ(conf_transport(Role::kUdpReceiver, local.sa(), local.len, nullptr, 0), kVma);
  EXPECT_EQ(add_conf_rule("use os udp_receiver *:6000"), 0);
  EXPECT_EQ(conf_transport(Role::kUdpReceiver, local.sa(), local.len, nullptr, 0), kOs);
  errno = 0;
  EXPECT_EQ(add_conf_rule("use os udp_receiver *:600000"), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(add_conf_rule(nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(VmaConfFile, MissingNamedFileWarnsAndOffloads) {
  StderrCapture cap;
  use("/nonexistent/libvma.conf");
  EXPECT_NE(cap.text().find("cannot read /nonexistent/libvma.conf"), std::string::npos);
  Addr dns("192.0.2.53", 53), local("10.0.0.2", 40000);
  EXPECT_EQ(conf_transport(Role::kUdpConnect, local.sa(), local.len, dns.sa(), dns.len), kVma);
}

TEST_F(VmaConfFile, ApplicationIdSelectsAndAnUnknownOneWarns) {
  char path[] = "/tmp/vma-conf-test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = "application-id * B1\nuse os tcp_server *:*\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
  close(fd);
  Addr a("10.0.0.1", 80);
  setenv("VMA_APPLICATION_ID", "B1", 1);
  use(path);
  EXPECT_EQ(conf_transport(Role::kTcpServer, a.sa(), a.len, nullptr, 0), kOs);
  setenv("VMA_APPLICATION_ID", "B2", 1);
  StderrCapture cap;
  use(path);
  EXPECT_NE(cap.text().find("VMA_APPLICATION_ID B2 matches no application-id section"),
            std::string::npos);
  EXPECT_EQ(conf_transport(Role::kTcpServer, a.sa(), a.len, nullptr, 0), kVma);
  unlink(path);
}

}  // namespace
}  // namespace ss::vma
