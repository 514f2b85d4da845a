// rsocket_bench: Google Benchmark fixtures comparing rsockets (shm and tcp
// providers) with kernel TCP on 127.0.0.1, in the same run.
//
//   PingPong64/<t>       64 B round trips, blocking calls (items = round trips,
//                        bytes = 2 x 64 per round trip)
//   PingPong64Spin/<t>   the same, both sides spinning on MSG_DONTWAIT
//   Stream64K/<t>        64 KiB messages streamed to the server, which
//   Stream1M/<t>         checksums them; the last iteration waits for its
//                        verified answer (items = messages, bytes = payload)
//   DgramPingPong64/<t>  64 B datagram echoes, blocking rsend/rrecv on a
//                        connected socket (kernel: UDP), the server echoing
//                        with rrecvfrom/rsendto (items = round trips)
//   DgramRate64/<t>      64 B datagrams one way, blocking sends; the server
//                        counts them (items = datagrams it received, so a
//                        drop lowers the rate; counter `lost` = sent - received)
//
// Each transport's server is a separate process, forked in main() before
// this process creates any rsocket, so the two ends never share the
// library's locks. The client connection to each is opened on first use
// (SLIPSTREAM_PROVIDER set and the configuration reloaded first) and kept
// for every later run. Times are wall-clock (UseRealTime). bench/run.sh
// prints the ratios to the kernel rows.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/dgram_echo.h"
#include "tools/demo_transport.h"

using namespace ssdemo;

namespace {

struct Endpoint {
  int pid = -1;
  int port = 0;
  std::string error;  // set once the transport is unusable
  bool connected = false;
  Conn conn;
};
std::map<Transport, Endpoint> g_ends;

// The datagram servers, one per transport.
struct DgramEnd {
  int pid = -1;
  int port = 0;
  std::string error;
  bool connected = false;
  DgramClient client;
};
std::map<Transport, DgramEnd> g_dgram;

// Watchdog: a run that takes longer than g_watchdog seconds (env
// RSOCKET_BENCH_WATCHDOG, default 60) gets its server killed (the client's
// blocking call should then fail and the transport is dropped); if the
// client is still stuck as long again, exit 3.
unsigned g_watchdog = 60;
volatile pid_t g_current_server = -1;
volatile sig_atomic_t g_fired = 0;

void say(const char* s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

void on_alarm(int) {
  if (!g_fired && g_current_server > 0) {
    g_fired = 1;
    say("rsocket_bench: a benchmark hung; killing its server\n");
    kill(g_current_server, SIGKILL);
    alarm(g_watchdog);
    return;
  }
  say("rsocket_bench: still stuck after the server was killed; giving up\n");
  _exit(3);
}

// Arms the watchdog for one run of a benchmark served by `server`;
// disarms when destroyed.
struct Watch {
  explicit Watch(Transport t) : Watch(g_ends[t].pid) {}
  explicit Watch(int server) {
    g_fired = 0;
    g_current_server = server;
    alarm(g_watchdog);
  }
  ~Watch() {
    alarm(0);
    g_current_server = -1;
  }
};

// The connection to `t`'s server, or nullptr with the reason in *why.
Conn* client(Transport t, std::string* why) {
  Endpoint& e = g_ends[t];
  if (!e.error.empty()) {
    *why = e.error;
    return nullptr;
  }
  if (!e.connected) {
    int rc = connect_loopback(t, e.port, &e.conn);
    if (rc) {
      e.error = std::string("connect: ") + strerror(-rc);
      *why = e.error;
      return nullptr;
    }
    e.connected = true;
  }
  return &e.conn;
}

// After an error the server and the client are out of step: drop the
// transport for the rest of the run.
void broken(benchmark::State& state, Transport t, const char* what, int rc) {
  Endpoint& e = g_ends[t];
  e.error = std::string(what) + ": " + strerror(-rc) + " (transport disabled for this run)";
  if (e.connected) e.conn.close();
  e.connected = false;
  state.SkipWithError(e.error.c_str());
}

void BM_PingPong(benchmark::State& state, Transport t, bool spin) {
  Watch watch(t);
  std::string why;
  Conn* c = client(t, &why);
  if (!c) {
    state.SkipWithError(why.c_str());
    return;
  }
  constexpr uint32_t kSize = 64;
  uint8_t out[kSize], in[kSize];
  for (uint32_t i = 0; i < kSize; i++) out[i] = static_cast<uint8_t>(i * 3 + 5);
  const uint64_t n = static_cast<uint64_t>(state.max_iterations);
  int rc = c->send_cmd(spin ? kPingSpin : kPing, kSize, n);
  if (rc) return broken(state, t, "command", rc);
  uint64_t i = 0;
  for (auto _ : state) {
    memcpy(out, &i, sizeof i);
    rc = c->send_all(out, kSize, spin);
    if (!rc) rc = c->recv_all(in, kSize, spin);
    if (rc == 1) rc = -ENODATA;
    if (!rc && memcmp(in, out, kSize) != 0) rc = -EBADMSG;
    if (rc) return broken(state, t, "ping-pong", rc);
    i++;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * kSize);
}

void BM_Stream(benchmark::State& state, Transport t, size_t size) {
  static std::map<size_t, std::unique_ptr<StreamSource>> sources;
  auto& src = sources[size];
  if (!src) src = std::make_unique<StreamSource>(size);
  Watch watch(t);
  std::string why;
  Conn* c = client(t, &why);
  if (!c) {
    state.SkipWithError(why.c_str());
    return;
  }
  const uint64_t n = static_cast<uint64_t>(state.max_iterations);
  const uint64_t want = src->expected(n);
  int rc = c->send_cmd(kStream, static_cast<uint32_t>(size), n);
  if (rc) return broken(state, t, "command", rc);
  uint64_t i = 0;
  for (auto _ : state) {
    rc = c->send_all(src->message(i), size, false);
    if (rc) return broken(state, t, "stream send", rc);
    if (++i == n) {  // the drain is part of the measurement
      StreamReply r;
      rc = c->recv_all(&r, sizeof r, false);
      if (rc == 1) rc = -ENODATA;
      if (rc) return broken(state, t, "stream answer", rc);
      if (r.bytes != n * size || r.checksum != want)
        return broken(state, t, "stream checksum (data corrupted)", -EBADMSG);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

// The datagram client of `t`, or nullptr (the run skipped with the reason).
DgramClient* dgram_client(benchmark::State& state, Transport t) {
  DgramEnd& e = g_dgram[t];
  if (e.error.empty() && !e.connected) {
    if (int rc = dgram_connect(t, e.port, 100, &e.client))
      e.error = std::string("connect: ") + strerror(-rc);
    else
      e.connected = true;
  }
  if (!e.error.empty()) {
    state.SkipWithError(e.error.c_str());
    return nullptr;
  }
  return &e.client;
}

void dgram_broken(benchmark::State& state, Transport t, const char* what, int rc) {
  DgramEnd& e = g_dgram[t];
  e.error = std::string(what) + ": " + strerror(-rc) + " (transport disabled for this run)";
  if (e.connected) e.client.close();
  e.connected = false;
  state.SkipWithError(e.error.c_str());
}

void BM_DgramPingPong(benchmark::State& state, Transport t) {
  Watch watch(g_dgram[t].pid);
  DgramClient* c = dgram_client(state, t);
  if (!c) return;
  constexpr size_t kSize = 64;
  uint8_t out[kSize], in[kSize];
  for (size_t i = 0; i < kSize; i++) out[i] = static_cast<uint8_t>(i * 7 + 1);
  out[0] = kDgramPing;
  uint64_t i = 0;
  for (auto _ : state) {
    memcpy(out + 8, &i, sizeof i);
    if (int rc = c->ping(out, in, kSize)) return dgram_broken(state, t, "echo", rc);
    i++;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * kSize);
}

void BM_DgramRate(benchmark::State& state, Transport t) {
  Watch watch(g_dgram[t].pid);
  DgramClient* c = dgram_client(state, t);
  if (!c) return;
  constexpr size_t kSize = 64;
  uint8_t out[kSize] = {kDgramOneWay};
  uint64_t got = 0;
  int rc = c->tally(&got);  // what came before is not this run's
  uint64_t i = 0;
  for (auto _ : state) {
    if (!rc) {
      memcpy(out + 8, &i, sizeof i);
      rc = c->one_way(out, kSize);
    }
    if (!rc && ++i == static_cast<uint64_t>(state.max_iterations))
      rc = c->tally(&got);  // the drain is part of the measurement
  }
  if (rc) return dgram_broken(state, t, "one way", rc);
  state.SetItemsProcessed(static_cast<int64_t>(got));
  state.SetBytesProcessed(static_cast<int64_t>(got * kSize));
  state.counters["lost"] = static_cast<double>(i > got ? i - got : 0);
}

void register_all() {
  // By benchmark, then transport: each rsocket row runs right after the
  // kernel row it is compared with.
  for (Transport t : kAllTransports)
    benchmark::RegisterBenchmark((std::string("PingPong64/") + transport_name(t)).c_str(),
                                 BM_PingPong, t, false)
        ->UseRealTime();
  for (Transport t : kAllTransports)
    benchmark::RegisterBenchmark((std::string("PingPong64Spin/") + transport_name(t)).c_str(),
                                 BM_PingPong, t, true)
        ->UseRealTime();
  for (Transport t : kAllTransports)
    benchmark::RegisterBenchmark((std::string("Stream64K/") + transport_name(t)).c_str(), BM_Stream,
                                 t, size_t{64} << 10)
        ->UseRealTime();
  for (Transport t : kAllTransports)
    benchmark::RegisterBenchmark((std::string("Stream1M/") + transport_name(t)).c_str(), BM_Stream,
                                 t, size_t{1} << 20)
        ->UseRealTime();
  for (Transport t : kAllTransports)
    benchmark::RegisterBenchmark((std::string("DgramPingPong64/") + transport_name(t)).c_str(),
                                 BM_DgramPingPong, t)
        ->UseRealTime();
  for (Transport t : kAllTransports)
    benchmark::RegisterBenchmark((std::string("DgramRate64/") + transport_name(t)).c_str(),
                                 BM_DgramRate, t)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGALRM, on_alarm);
  if (const char* w = getenv("RSOCKET_BENCH_WATCHDOG"))
    if (atoi(w) > 0) g_watchdog = static_cast<unsigned>(atoi(w));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  // Every server first: no child inherits any rsocket state.
  for (Transport t : kAllTransports) {
    Endpoint& e = g_ends[t];
    int r = spawn_server(t, &e.port);
    if (r < 0)
      e.error = std::string("server did not start: ") + strerror(-r);
    else
      e.pid = r;
    DgramEnd& d = g_dgram[t];
    r = spawn_server_with(dgram_server_main, t, &d.port);
    if (r < 0)
      d.error = std::string("datagram server did not start: ") + strerror(-r);
    else
      d.pid = r;
  }

  register_all();
  benchmark::RunSpecifiedBenchmarks();

  int status = 0;
  for (auto& [t, e] : g_ends) {
    if (e.pid < 0) continue;
    if (e.connected) {
      e.conn.send_cmd(kQuit, 0, 0);
      e.conn.close();
      const char* why = nullptr;
      if (reap_server(e.pid, 10000, &why) != 0) {
        fprintf(stderr, "rsocket_bench: %s server: %s\n", transport_name(t), why);
        status = 1;
      }
    } else {
      // Never used, or dropped after an error: nothing more to learn.
      kill(e.pid, SIGKILL);
      const char* why = nullptr;
      reap_server(e.pid, 1000, &why);
    }
  }
  for (auto& [t, d] : g_dgram) {
    if (d.pid < 0) continue;
    const bool used = d.connected;
    if (used) d.client.close();  // asks the server to quit
    if (!used) kill(d.pid, SIGKILL);
    const char* why = nullptr;
    if (reap_server(d.pid, used ? 10000 : 1000, &why) != 0 && used) {
      fprintf(stderr, "rsocket_bench: %s datagram server: %s\n", transport_name(t), why);
      status = 1;
    }
    if (!d.error.empty()) {
      fprintf(stderr, "rsocket_bench: %s datagrams: %s\n", transport_name(t), d.error.c_str());
      status = 1;
    }
  }
  for (auto& [t, e] : g_ends)
    if (!e.error.empty()) {
      fprintf(stderr, "rsocket_bench: %s: %s\n", transport_name(t), e.error.c_str());
      status = 1;
    }
  benchmark::Shutdown();
  return status;
}
