// The VMA face's settings table: libvma's defaults, its value syntax
// (names and numbers of VMA_TRACELEVEL and VMA_SPEC, -1 for "forever", the
// ring logic numbers, "" meaning "none"), VMA_SPEC=latency changing defaults
// while an explicit variable wins, and a bad value warned once, naming the
// variable, the value and the default used.
#include <stdlib.h>

#include <string>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "libvmacompat/settings.h"
#include "tests/common/stderr_capture.h"

namespace ss::vma::settings {
namespace {

using sstest::StderrCapture;

constexpr const char* kVars[] = {"VMA_SPEC",
                                 "VMA_RX_POLL",
                                 "VMA_SELECT_POLL",
                                 "VMA_TRACELEVEL",
                                 "VMA_RING_ALLOCATION_LOGIC_RX",
                                 "VMA_STATS_SHMEM_DIR",
                                 "VMA_MEM_ALLOC_TYPE",
                                 "VMA_TX_BUFS",
                                 "VMA_RX_BUFS",
                                 "VMA_LOG_FILE",
                                 "VMA_STATS_FD_NUM",
                                 "VMA_THREAD_MODE",
                                 "VMA_RX_WRE",
                                 "VMA_TX_WRE",
                                 "VMA_SOCKETXTREME"};

class VmaSettings : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : kVars) unsetenv(v);
    config::reload();
  }
  // Sets variables (NAME, value, ...) and reloads; returns what was logged.
  template <typename... Pairs>
  static std::string with(Pairs... kv) {
    const char* a[] = {kv...};
    for (size_t i = 0; i + 1 < sizeof...(kv); i += 2) setenv(a[i], a[i + 1], 1);
    StderrCapture cap;
    config::reload();
    return cap.text();
  }
};

TEST_F(VmaSettings, ListedWithLibvmaDefaults) {
  EXPECT_EQ(config::find_component("vma"), static_cast<config::Component*>(&table));
  EXPECT_EQ(get(Id::kRxPoll), 100000);
  EXPECT_EQ(get(Id::kSelectPoll), 100000);
  EXPECT_EQ(get(Id::kRxBufs), 200000);
  EXPECT_EQ(get(Id::kTxBufs), 200000);
  EXPECT_EQ(get(Id::kRxWre), 16000);
  EXPECT_EQ(get(Id::kTxWre), 2048);
  EXPECT_EQ(get(Id::kStatsFdNum), 100);
  EXPECT_EQ(get(Id::kMemAllocType), 2);
  EXPECT_EQ(get(Id::kFork), 1);
  EXPECT_EQ(get(Id::kOffloadedSockets), 1);
  EXPECT_EQ(get(Id::kRxUdpPollOsRatio), 100);
  EXPECT_EQ(get(Id::kSelectPollOsRatio), 10);
  EXPECT_EQ(get(Id::kMtu), 0);
  EXPECT_EQ(trace_level(), TraceLevel::kInfo);
  EXPECT_EQ(spec(), Spec::kNone);
  EXPECT_EQ(ring_allocation_logic(Id::kRingAllocationLogicRx), 0);
  EXPECT_EQ(get_string(Id::kApplicationId), "VMA_DEFAULT_APPLICATION_ID");
  EXPECT_EQ(get_string(Id::kStatsShmemDir), "/tmp/");
  EXPECT_EQ(get_string(Id::kLogFile), "");
  EXPECT_EQ(table.source(Id::kRxPoll), config::Source::kDefault);
}

TEST_F(VmaSettings, ValueSyntax) {
  EXPECT_EQ(with("VMA_RX_POLL", "-1", "VMA_SELECT_POLL", "-1"), "");
  EXPECT_EQ(get(Id::kRxPoll), -1);
  EXPECT_EQ(get(Id::kSelectPoll), -1);
  with("VMA_RX_POLL", "0");  // libvma polls at least once
  EXPECT_EQ(get(Id::kRxPoll), 1);
  // Trace levels by name and by libvma's numbers (4 is debug).
  with("VMA_TRACELEVEL", "4");
  EXPECT_EQ(trace_level(), TraceLevel::kDebug);
  with("VMA_TRACELEVEL", "details");
  EXPECT_EQ(trace_level(), TraceLevel::kDetails);
  with("VMA_TRACELEVEL", "WARNING");
  EXPECT_EQ(trace_level(), TraceLevel::kWarn);
  with("VMA_TRACELEVEL", "func+");
  EXPECT_EQ(trace_level(), TraceLevel::kFiner);
  with("VMA_RING_ALLOCATION_LOGIC_RX", "20");
  EXPECT_EQ(ring_allocation_logic(Id::kRingAllocationLogicRx), 20);
  with("VMA_SPEC", "15");
  EXPECT_EQ(spec(), Spec::kLatency);
  with("VMA_SPEC", "multi_ring_latency");
  EXPECT_EQ(spec(), Spec::kMultiRingLatency);
  // An empty directory disables the statistics: a value, not an error.
  EXPECT_EQ(with("VMA_STATS_SHMEM_DIR", ""), "");
  EXPECT_EQ(get_string(Id::kStatsShmemDir), "");
  EXPECT_EQ(table.source(Id::kStatsShmemDir), config::Source::kEnv);
  with("VMA_LOG_FILE", "/tmp/vma.%d.log");
  EXPECT_EQ(path_with_pid(Id::kLogFile, 42), "/tmp/vma.42.log");
}

TEST_F(VmaSettings, SpecLatencyChangesDefaultsAndExplicitValuesWin) {
  with("VMA_SPEC", "latency");
  EXPECT_EQ(spec(), Spec::kLatency);
  EXPECT_EQ(get(Id::kRxPoll), -1);
  EXPECT_EQ(get(Id::kSelectPoll), -1);
  EXPECT_EQ(get(Id::kThreadMode), 0);
  EXPECT_EQ(get(Id::kSelectPollOsRatio), 1);
  EXPECT_EQ(get(Id::kRxWre), 256);
  EXPECT_EQ(table.origin(Id::kRxPoll), "VMA_SPEC=latency");
  EXPECT_EQ(get(Id::kRxBufs), 200000);  // not in the profile
  // An explicit variable wins over the profile.
  with("VMA_RX_POLL", "500", "VMA_THREAD_MODE", "2");
  EXPECT_EQ(get(Id::kRxPoll), 500);
  EXPECT_EQ(get(Id::kThreadMode), 2);
  EXPECT_EQ(table.origin(Id::kRxPoll), "env VMA_RX_POLL");
  EXPECT_EQ(get(Id::kSelectPoll), -1);
  // ultra-latency: its own values over latency's, latency's for the rest.
  unsetenv("VMA_RX_POLL");
  with("VMA_SPEC", "ultra-latency");
  EXPECT_EQ(get(Id::kTxBufs), 512);
  EXPECT_EQ(get(Id::kSelectPollOsRatio), 0);
  EXPECT_EQ(get(Id::kRxPoll), -1);
  // A profile's value that is a name (7750's log level).
  with("VMA_SPEC", "7750");
  EXPECT_EQ(trace_level(), TraceLevel::kWarn);
  EXPECT_EQ(get(Id::kStatsFdNum), 1024);
}

// libvma reads VMA_SOCKETXTREME first and makes 1024 the default of
// VMA_RX_WRE; a profile's value and an explicit variable come after it.
TEST_F(VmaSettings, SocketXtremeMakesRxWre1024UnlessProfileOrVariable) {
  EXPECT_EQ(with("VMA_SOCKETXTREME", "1"), "");
  EXPECT_EQ(get(Id::kRxWre), 1024);
  EXPECT_EQ(table.origin(Id::kRxWre), "VMA_SOCKETXTREME=1");
  EXPECT_EQ(get(Id::kTxWre), 2048);
  with("VMA_SOCKETXTREME", "0");
  EXPECT_EQ(get(Id::kRxWre), 16000);
  with("VMA_SOCKETXTREME", "1", "VMA_SPEC", "latency");
  EXPECT_EQ(get(Id::kRxWre), 256);
  EXPECT_EQ(table.origin(Id::kRxWre), "VMA_SPEC=latency");
  with("VMA_RX_WRE", "5000");
  EXPECT_EQ(get(Id::kRxWre), 5000);
  EXPECT_EQ(table.origin(Id::kRxWre), "env VMA_RX_WRE");
  unsetenv("VMA_RX_WRE");
  unsetenv("VMA_SPEC");
  // A value the row refuses is its warning and means off.
  const std::string err = with("VMA_SOCKETXTREME", "2");
  EXPECT_NE(err.find("bad value \"2\" from env VMA_SOCKETXTREME"), std::string::npos) << err;
  EXPECT_EQ(get(Id::kSocketXtreme), 0);
  EXPECT_EQ(get(Id::kRxWre), 16000);
}

TEST_F(VmaSettings, BadValueWarnsOnceWithTheDefault) {
  std::string err = with("VMA_RX_POLL", "fast");
  EXPECT_EQ(get(Id::kRxPoll), 100000);
  EXPECT_NE(err.find("rx_poll: bad value \"fast\" from env VMA_RX_POLL"), std::string::npos) << err;
  EXPECT_NE(err.find("using default 100000"), std::string::npos) << err;
  size_t n = 0;
  for (size_t at = 0; (at = err.find("WARN", at)) != std::string::npos; ++at) ++n;
  EXPECT_EQ(n, 1u) << err;
  unsetenv("VMA_RX_POLL");

  err = with("VMA_RING_ALLOCATION_LOGIC_RX", "5");  // not one of libvma's numbers
  EXPECT_EQ(ring_allocation_logic(Id::kRingAllocationLogicRx), 0);
  EXPECT_NE(err.find("bad value \"5\" from env VMA_RING_ALLOCATION_LOGIC_RX"), std::string::npos)
      << err;
  EXPECT_NE(err.find("using default 0"), std::string::npos) << err;
  unsetenv("VMA_RING_ALLOCATION_LOGIC_RX");

  err = with("VMA_MEM_ALLOC_TYPE", "3");
  EXPECT_EQ(get(Id::kMemAllocType), 2);
  EXPECT_NE(err.find("bad value \"3\" from env VMA_MEM_ALLOC_TYPE"), std::string::npos) << err;
  unsetenv("VMA_MEM_ALLOC_TYPE");

  // Ring entries: 1 to 32768 (ring_depth.h); beyond, the default.
  err = with("VMA_RX_WRE", "40000", "VMA_TX_WRE", "0");
  EXPECT_EQ(get(Id::kRxWre), 16000);
  EXPECT_EQ(get(Id::kTxWre), 2048);
  EXPECT_NE(err.find("rx_wre: bad value \"40000\" from env VMA_RX_WRE"), std::string::npos) << err;
  EXPECT_NE(err.find("using default 16000"), std::string::npos) << err;
  EXPECT_NE(err.find("tx_wre: bad value \"0\" from env VMA_TX_WRE"), std::string::npos) << err;
  EXPECT_NE(err.find("using default 2048"), std::string::npos) << err;
  unsetenv("VMA_RX_WRE");
  unsetenv("VMA_TX_WRE");
  EXPECT_EQ(with("VMA_RX_WRE", "32768"), "");
  EXPECT_EQ(get(Id::kRxWre), 32768);
  unsetenv("VMA_RX_WRE");

  err = with("VMA_TRACELEVEL", "loud");
  EXPECT_EQ(trace_level(), TraceLevel::kInfo);
  EXPECT_NE(err.find("using default info"), std::string::npos) << err;
  unsetenv("VMA_TRACELEVEL");

  // A bad VMA_SPEC is one warning and means no profile.
  err = with("VMA_SPEC", "fastest");
  EXPECT_EQ(spec(), Spec::kNone);
  EXPECT_EQ(get(Id::kRxPoll), 100000);
  EXPECT_NE(err.find("spec: bad value \"fastest\" from env VMA_SPEC"), std::string::npos) << err;
  EXPECT_NE(err.find("using default none"), std::string::npos) << err;
}

}  // namespace
}  // namespace ss::vma::settings
