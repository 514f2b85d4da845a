// slipstream-demo: the same client/server exchange over kernel TCP and over
// rsockets on the shm and tcp providers, side by side.
//
// One server child per transport is forked at start (before this process
// creates any rsocket); each listens on 127.0.0.1 on an ephemeral port and
// passes the port up a pipe. The parent then connects to each in turn
// (setting SLIPSTREAM_PROVIDER and reloading the configuration first) and
// runs: a 64 B ping-pong (blocking calls), the same ping-pong with both
// sides spinning on MSG_DONTWAIT ("busy-poll"), and two streams (64 KiB and
// 1 MiB messages) whose checksum the server computes and sends back. Any
// failure or corruption makes the exit status non-zero; a transport that
// hangs has its server killed after --timeout seconds. First, what the
// hardware allows in this run (tools/demo_floor.h), to read the shm rows
// against.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/demo_floor.h"
#include "tools/demo_transport.h"

using namespace ssdemo;

namespace {

struct Options {
  uint64_t iters = 100000;             // ping-pong round trips per row
  uint64_t stream_bytes = 1ull << 30;  // bytes per stream measurement
  unsigned timeout_s = 30;             // per transport
  std::vector<Transport> transports{std::begin(kAllTransports), std::end(kAllTransports)};
};

struct Row {
  std::string name;
  bool busy_poll = false;
  bool ran = false;
  bool ok = true;
  std::string error;
  double rtt_med_us = 0, rtt_p99_us = 0;
  bool has_bw = false;
  double bw64k = 0, bw1m = 0;  // GB/s (1e9 bytes per second)
};

// The watchdog. A transport that hangs: its server is killed (the client's
// blocking call should then fail with the connection) and the run goes on;
// if the client is still stuck kGrace seconds later, the run ends.
constexpr unsigned kGrace = 15;
volatile sig_atomic_t g_nchildren = 0;
pid_t g_children[8];
volatile pid_t g_current_server = -1;
volatile sig_atomic_t g_timed_out = 0;
const char* volatile g_phase = "start-up";

void say(const char* s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

void on_alarm(int) {
  if (!g_timed_out && g_current_server > 0) {
    g_timed_out = 1;
    say("slipstream-demo: timed out during: ");
    say(g_phase);
    say("; killing its server\n");
    kill(g_current_server, SIGKILL);
    alarm(kGrace);
    return;
  }
  say("slipstream-demo: still stuck after its server was killed, during: ");
  say(g_phase);
  say("; giving up\n");
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] > 0) kill(g_children[i], SIGKILL);
  _exit(3);
}

void usage(FILE* f) {
  fprintf(f,
          "usage: slipstream-demo [--quick] [--iters N] [--stream-mib M] [--timeout S]\n"
          "                       [--transports kernel,shm,tcp]\n"
          "  --quick        few iterations (2000 round trips, 32 MiB streams), for tests\n"
          "  --iters N      ping-pong round trips per row (default 100000)\n"
          "  --stream-mib M MiB per stream measurement (default 1024)\n"
          "  --timeout S    seconds one transport may take before its server is killed (30)\n"
          "  --transports   which transports to run (the kernel row is the reference)\n");
}

bool parse_u64(const char* s, uint64_t* v) {
  char* end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || end == s || *end || x == 0) return false;
  *v = x;
  return true;
}

bool parse_args(int argc, char** argv, Options* o) {
  bool quick = false;
  uint64_t iters = 0, stream_bytes = 0;  // 0: not given
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&](const char** v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    const char* v;
    uint64_t n;
    if (a == "--quick") {
      quick = true;
    } else if (a == "--iters") {
      if (!value(&v) || !parse_u64(v, &iters)) return false;
    } else if (a == "--stream-mib") {
      if (!value(&v) || !parse_u64(v, &n) || n > (1ull << 30)) return false;
      stream_bytes = n << 20;
    } else if (a == "--timeout") {
      if (!value(&v) || !parse_u64(v, &n)) return false;
      o->timeout_s = static_cast<unsigned>(n);
    } else if (a == "--transports") {
      if (!value(&v)) return false;
      o->transports.clear();
      std::string list = v;
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        std::string one =
            list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        Transport t;
        if (!parse_transport(one.c_str(), &t)) return false;
        if (std::find(o->transports.begin(), o->transports.end(), t) == o->transports.end())
          o->transports.push_back(t);
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      exit(0);
    } else {
      return false;
    }
  }
  // --quick sets what --iters and --stream-mib do not.
  if (quick) {
    o->iters = 2000;
    o->stream_bytes = 32ull << 20;
  }
  if (iters) o->iters = iters;
  if (stream_bytes) o->stream_bytes = stream_bytes;
  return true;
}

const char* row_name(Transport t, bool busy) {
  switch (t) {
    case Transport::kKernel:
      return busy ? "kernel TCP (busy-poll)" : "kernel TCP";
    case Transport::kShm:
      return busy ? "shm (busy-poll)" : "rsocket shm";
    case Transport::kTcp:
      return busy ? "tcp (busy-poll)" : "rsocket tcp";
  }
  return "?";
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  k = std::clamp<size_t>(k, 1, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// Fills *row from one ping-pong measurement (after a warm-up).
int measure_pingpong(Conn& c, const Options& o, bool spin, Row* row) {
  const char* err = "?";
  uint64_t warm = std::max<uint64_t>(o.iters / 10, 100);
  int rc = run_pingpong(c, 64, warm, spin, nullptr, &err);
  std::vector<double> rtt;
  if (!rc) rc = run_pingpong(c, 64, o.iters, spin, &rtt, &err);
  if (rc) {
    row->ok = false;
    row->error = std::string(spin ? "busy-poll " : "") + err + ": " + strerror(-rc);
    return rc;
  }
  row->ran = true;
  row->rtt_med_us = percentile(rtt, 0.5) / 1000.0;
  row->rtt_p99_us = percentile(rtt, 0.99) / 1000.0;
  return 0;
}

int measure_stream(Conn& c, const Options& o, size_t msg, double* gbps, std::string* error) {
  StreamSource src(msg);
  const char* err = "?";
  uint64_t count = std::max<uint64_t>(o.stream_bytes / msg, 4);
  double secs = 0;
  int rc = run_stream(c, src, std::max<uint64_t>(count / 8, 2), nullptr, &err);  // warm-up
  if (!rc) rc = run_stream(c, src, count, &secs, &err);
  if (rc) {
    *error = std::string(msg == 65536 ? "64 KiB " : "1 MiB ") + err + ": " + strerror(-rc);
    return rc;
  }
  *gbps = static_cast<double>(count * msg) / secs / 1e9;
  return 0;
}

// Runs every exchange on one transport; fills its row and its busy-poll row.
void run_transport(Transport t, int port, const Options& o, Row* row, Row* busy) {
  Conn c;
  g_phase = row->name.c_str();
  int rc = connect_loopback(t, port, &c);
  if (rc) {
    row->ok = false;
    row->error = std::string("connect: ") + strerror(-rc);
    return;
  }
  if (measure_pingpong(c, o, false, row)) return c.close();
  g_phase = busy->name.c_str();
  if (measure_pingpong(c, o, true, busy)) {
    row->ok = false;
    row->error = "busy-poll row failed";
    return c.close();
  }
  g_phase = row->name.c_str();
  if (measure_stream(c, o, 64 << 10, &row->bw64k, &row->error) ||
      measure_stream(c, o, 1 << 20, &row->bw1m, &row->error)) {
    row->ok = false;
    return c.close();
  }
  row->has_bw = true;
  rc = c.send_cmd(kQuit, 0, 0);
  if (rc) {
    row->ok = false;
    row->error = std::string("quit: ") + strerror(-rc);
  }
  c.close();
}

std::string ratio(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.2fx", v);
  return b;
}

// The shm rows against what the hardware allowed in this run.
void print_floor(const std::vector<Row>& rows, const Floor& f) {
  if (!f.ok) {
    printf("hardware floor: not measured (the ping-pong helper did not answer)\n");
    return;
  }
  const double before = f.line_before_shm_us, after = f.line_after_shm_us;
  printf(
      "\nhardware, same run: a cache line bounced between two processes, one-way: %.2f us at\n"
      "the start",
      f.line_one_way_us);
  if (before > 0 && after > 0)
    printf(", %.2f us right before the shm rows, %.2f us right after them", before, after);
  printf(
      "\n(the floor of any shared-memory round trip); the stream server's work on one core\n"
      "alone (copy out of a 1 MiB ring, checksum) %.2f GB/s in 64 KiB pieces, %.2f GB/s\n"
      "in 1 MiB pieces (the ceiling of the streams it receives)\n",
      f.receive64k_gbps, f.receive1m_gbps);
  // The same work on bytes the other core writes: the copies every
  // shared-memory stream between two cores makes, with nothing around them.
  const double ring64k = std::max(f.ring64k_gbps, f.ring64k_after_shm_gbps);
  const double ring1m = std::max(f.ring1m_gbps, f.ring1m_after_shm_gbps);
  if (ring64k > 0 && ring1m > 0) {
    printf(
        "the same work on bytes another process writes into a shared 1 MiB ring (two cores,\n"
        "no transport): %.2f / %.2f GB/s (64 KiB / 1 MiB) at the start",
        f.ring64k_gbps, f.ring1m_gbps);
    if (f.ring64k_after_shm_gbps > 0)
      printf(", %.2f / %.2f GB/s right\nafter the shm rows", f.ring64k_after_shm_gbps,
             f.ring1m_after_shm_gbps);
    printf("\n(the copies any shared-memory stream makes, and nothing else)\n");
  }
  // The shm rows are read against the floor next to them, only when it held
  // still across them: a shared host moves the two vCPUs (a cache line
  // between siblings of one core costs a tenth of one between cores).
  const bool steady =
      before > 0 && after > 0 && std::max(before, after) <= 1.25 * std::min(before, after);
  const double line = (before + after) / 2;
  for (const Row& r : rows) {
    if (!r.ok || !r.ran) continue;
    if (r.name == "shm (busy-poll)" && steady)
      printf("shm (busy-poll) one-way: %.2f us = floor + %.2f us\n", r.rtt_med_us / 2,
             r.rtt_med_us / 2 - line);
    else if (r.name == "shm (busy-poll)")
      printf("shm (busy-poll) one-way: %.2f us (%s: no difference taken)\n", r.rtt_med_us / 2,
             before > 0 && after > 0 ? "the floor moved across the shm rows"
                                     : "the floor next to the shm rows was not measured");
    if (r.name == "rsocket shm" && r.has_bw) {
      printf("rsocket shm streams: %.0f%% (64 KiB), %.0f%% (1 MiB) of the one-core ceiling",
             100 * r.bw64k / f.receive64k_gbps, 100 * r.bw1m / f.receive1m_gbps);
      if (ring64k > 0 && ring1m > 0)  // against the better of its two measurements
        printf(",\n%.0f%% (64 KiB), %.0f%% (1 MiB) of the two-core ring", 100 * r.bw64k / ring64k,
               100 * r.bw1m / ring1m);
      printf("\n");
    }
  }
}

void print_table(const std::vector<Row>& rows, const Options& o) {
  const Row* kernel = nullptr;
  const Row* kernel_busy = nullptr;
  for (const Row& r : rows) {
    if (r.name == "kernel TCP" && r.ok && r.ran) kernel = &r;
    if (r.name == "kernel TCP (busy-poll)" && r.ok && r.ran) kernel_busy = &r;
  }
  printf(
      "\n127.0.0.1, client and server in two processes; %llu round trips of 64 B, "
      "%llu MiB per stream\n\n",
      static_cast<unsigned long long>(o.iters),
      static_cast<unsigned long long>(o.stream_bytes >> 20));
  printf("%-24s %9s %9s %9s %8s | %9s %8s | %9s %8s\n", "transport", "RTT med", "RTT p99",
         "one-way", "lat", "64 KiB", "bw", "1 MiB", "bw");
  printf("%-24s %9s %9s %9s %8s | %9s %8s | %9s %8s\n", "", "(us)", "(us)", "(us)", "vs ref",
         "(GB/s)", "vs ref", "(GB/s)", "vs ref");
  printf("%s\n", std::string(24 + 10 * 3 + 9 + 3 + 18 + 3 + 18, '-').c_str());
  for (const Row& r : rows) {
    if (!r.ok) {
      printf("%-24s FAILED: %s\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    if (!r.ran) continue;
    const Row* ref = r.busy_poll ? kernel_busy : kernel;
    std::string lat = ref ? ratio(ref->rtt_med_us / r.rtt_med_us) : "-";
    printf("%-24s %9.2f %9.2f %9.2f %8s |", r.name.c_str(), r.rtt_med_us, r.rtt_p99_us,
           r.rtt_med_us / 2, lat.c_str());
    if (r.has_bw) {
      std::string b1 = kernel && kernel->has_bw ? ratio(r.bw64k / kernel->bw64k) : "-";
      std::string b2 = kernel && kernel->has_bw ? ratio(r.bw1m / kernel->bw1m) : "-";
      printf(" %9.3f %8s | %9.3f %8s\n", r.bw64k, b1.c_str(), r.bw1m, b2.c_str());
    } else {
      printf(" %9s %8s | %9s %8s\n", "-", "", "-", "");
    }
  }
  printf(
      "\nratios: above 1 is faster than the reference, measured in this run: kernel TCP\n"
      "for the blocking rows, kernel TCP (busy-poll) for the busy-poll rows\n"
      "(latency: reference median RTT / this median RTT; bandwidth: this / reference).\n");
  for (const Row& r : rows)
    if (r.name == "shm (busy-poll)" && r.ok && r.ran && kernel)
      printf("shm (busy-poll) against blocking kernel TCP: %s lower median latency\n",
             ratio(kernel->rtt_med_us / r.rtt_med_us).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_args(argc, argv, &o)) {
    usage(stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGALRM, on_alarm);

  // Before any rsocket exists: the floor's helper is forked too (it sleeps
  // between measurements).
  g_phase = "hardware floor";
  LineProbe probe;
  alarm(o.timeout_s);
  Floor floor;
  if (probe.start()) floor = measure_floor(&probe, o.iters);
  alarm(0);

  // Fork every server first: no child inherits any rsocket state.
  struct Server {
    Transport t;
    int pid = -1;
    int port = 0;
    int err = 0;
  };
  std::vector<Server> servers;
  for (Transport t : o.transports) {
    Server s{t};
    int r = spawn_server(t, &s.port);
    if (r < 0)
      s.err = r;
    else
      s.pid = r;
    if (s.pid > 0 && g_nchildren < 8) {
      g_children[g_nchildren] = s.pid;
      g_nchildren = g_nchildren + 1;
    }
    servers.push_back(s);
  }

  std::vector<Row> rows;
  rows.reserve(2 * servers.size());
  bool failed = false;
  for (Server& s : servers) {
    Row row;
    row.name = row_name(s.t, false);
    Row busy;  // every transport also gets its busy-poll row
    busy.name = row_name(s.t, true);
    busy.busy_poll = true;
    if (s.pid < 0) {
      row.ok = false;
      row.error = std::string("server did not start: ") + strerror(-s.err);
    } else {
      // The floor right before and after the shm rows: read against
      // those, not against the start of the run.
      if (s.t == Transport::kShm) floor.line_before_shm_us = probe.one_way_us(o.iters);
      g_timed_out = 0;
      g_current_server = s.pid;
      alarm(o.timeout_s);
      run_transport(s.t, s.port, o, &row, &busy);
      if (g_timed_out) {
        Row* r = !busy.ok ? &busy : &row;
        r->ok = row.ok = false;
        r->error = "timed out after " + std::to_string(o.timeout_s) + " s (server killed; then " +
                   r->error + ")";
      }
      const char* why = nullptr;
      // A failed exchange may leave the server waiting: do not wait long.
      if (reap_server(s.pid, row.ok ? 10000 : 1000, &why) != 0 && row.ok) {
        row.ok = false;
        row.error = why;
      }
      alarm(0);
      g_current_server = -1;
      // Outside the row's alarm: a late alarm would fail a finished row.
      if (s.t == Transport::kShm && row.ok) {
        floor.line_after_shm_us = probe.one_way_us(o.iters);
        floor.ring64k_after_shm_gbps = probe.ring_gbps(64 << 10);
        floor.ring1m_after_shm_gbps = probe.ring_gbps(1 << 20);
      }
    }
    failed |= !row.ok || !busy.ok;
    rows.push_back(row);
    rows.push_back(busy);
  }
  print_table(rows, o);
  print_floor(rows, floor);
  if (failed) fprintf(stderr, "slipstream-demo: FAILED (see the table above)\n");
  return failed ? 1 : 0;
}
