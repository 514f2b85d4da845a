// vma_stats: prints the counters a process running the VMA face publishes
// in DIR/vmastat.<pid> (man vma_stats(8)).
// Exit status: 0 printed, 1 no such process or file (or a bad file), 2 usage.
#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "libvmacompat/stats_format.h"
#include "libvmacompat/stats_proc.h"
#include "libvmacompat/stats_reader.h"

namespace {

using namespace ss::vma::stats;

constexpr char kUsage[] =
    "Usage: vma_stats [options]\n"
    "  -p, --pid=PID            the process to show\n"
    "  -k, --directory=DIR      where vmastat.<pid> files are (default /tmp/)\n"
    "  -n, --name=NAME          the process with this name\n"
    "  -f, --find_pid           find the one process publishing (default)\n"
    "  -F, --forbid_clean       keep files of processes that are gone\n"
    "  -i, --interval=SEC       seconds between prints (1)\n"
    "  -c, --cycles=N           prints, 0 = until the process ends (default 0)\n"
    "  -v, --view=1|2|3|5       basic, with rx queue, full, netstat-like\n"
    "  -d, --details=1|2        totals, or per second over each interval\n"
    "  -s, --sockets=LIST       only these fds: 3,5-9\n"
    "  -V, --version            version\n"
    "  -h, --help               this text\n";

int usage_error(const char* fmt, const char* arg) {
  fprintf(stderr, "vma_stats: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", kUsage);
  return 2;
}

bool number(const char* text, long lo, long hi, long* out) {
  char* end;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (end == text || *end || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

double seconds_now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

struct Options {
  long pid = 0;
  std::string dir = kDefaultDir;
  std::string name;
  bool clean = true;
  long interval = 1;
  long cycles = 0;
  ViewOptions view;
};

// The file to show when no pid is given: the one live publisher (named
// `name` if given); files of processes that are gone are removed unless
// told not to.
int find_pid(const Options& o, long* pid) {
  std::vector<Snapshot> live;
  for (const StatsFile& f : list_stats_files(o.dir)) {
    Snapshot s;
    std::string error;
    if (!read_stats_file(f.path, &s, &error)) {
      fprintf(stderr, "vma_stats: skipped %s\n", error.c_str());
      continue;
    }
    if (is_stale(s)) {
      if (o.clean && s.pid == f.pid && unlink(f.path.c_str()) == 0)
        fprintf(stderr, "vma_stats: removed %s of process %d, which is gone\n", f.path.c_str(),
                f.pid);
      continue;
    }
    if (s.pid == f.pid && (o.name.empty() || s.app_name == o.name)) live.push_back(std::move(s));
  }
  if (live.empty()) {
    fprintf(stderr, "vma_stats: no running process%s%s publishes statistics in %s\n",
            o.name.empty() ? "" : " named ", o.name.c_str(), o.dir.c_str());
    return 1;
  }
  if (live.size() > 1) {
    fprintf(stderr, "vma_stats: several processes publish statistics in %s; choose one with -p:\n",
            o.dir.c_str());
    for (const Snapshot& s : live) fprintf(stderr, "  %d %s\n", s.pid, s.app_name.c_str());
    return 1;
  }
  *pid = live[0].pid;
  return 0;
}

int run(const Options& o) {
  long pid = o.pid;
  if (!pid) {
    if (const int rc = find_pid(o, &pid)) return rc;
  }
  const std::string path = stats_path(o.dir, static_cast<int>(pid));
  // Per second: a first reading, then each print is the rate since the last.
  Snapshot before;
  double before_s = 0;
  const long first = o.view.per_second ? -1 : 0;
  for (long i = first; o.cycles == 0 || i < o.cycles; ++i) {
    if (i > first) sleep(static_cast<unsigned>(o.interval));
    Snapshot s;
    std::string error;
    const bool ok = read_stats_file(path, &s, &error);
    if (ok && s.pid != pid) error = path + ": belongs to process " + std::to_string(s.pid);
    if (ok && s.pid == pid && !is_stale(s)) {
      const double now_s = seconds_now();
      if (!o.view.per_second)
        print_view(stdout, s, o.view);
      else if (i >= 0)
        print_view(stdout, per_second(before, s, now_s - before_s), o.view);
      before = std::move(s);
      before_s = now_s;
      continue;
    }
    if (i > first) {  // it was running a moment ago
      printf("vma_stats: process %ld ended\n", pid);
      return 0;
    }
    if (ok && s.pid == pid)
      fprintf(stderr, "vma_stats: process %ld is gone; %s is stale\n", pid, path.c_str());
    else if (access(path.c_str(), F_OK) != 0)
      fprintf(stderr,
              "vma_stats: no statistics of process %ld in %s (not running with the VMA face, "
              "or with another VMA_STATS_SHMEM_DIR)\n",
              pid, o.dir.c_str());
    else
      fprintf(stderr, "vma_stats: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  static const option kLong[] = {{"pid", required_argument, nullptr, 'p'},
                                 {"directory", required_argument, nullptr, 'k'},
                                 {"name", required_argument, nullptr, 'n'},
                                 {"find_pid", no_argument, nullptr, 'f'},
                                 {"forbid_clean", no_argument, nullptr, 'F'},
                                 {"interval", required_argument, nullptr, 'i'},
                                 {"cycles", required_argument, nullptr, 'c'},
                                 {"view", required_argument, nullptr, 'v'},
                                 {"details", required_argument, nullptr, 'd'},
                                 {"zero", no_argument, nullptr, 'z'},
                                 {"log_level", required_argument, nullptr, 'l'},
                                 {"fd_dump", required_argument, nullptr, 'S'},
                                 {"details_level", required_argument, nullptr, 'D'},
                                 {"sockets", required_argument, nullptr, 's'},
                                 {"version", no_argument, nullptr, 'V'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  Options o;
  long v;
  int opt;
  while ((opt = getopt_long(argc, argv, "p:k:n:fFi:c:v:d:zl:S:D:s:Vh", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'p':
        if (!number(optarg, 1, 0x7fffffff, &o.pid)) return usage_error("bad pid '%s'", optarg);
        break;
      case 'k':
        if (!*optarg) return usage_error("empty directory%s", "");
        o.dir = optarg;
        break;
      case 'n':
        o.name = optarg;
        break;
      case 'f':
        break;
      case 'F':
        o.clean = false;
        break;
      case 'i':
        if (!number(optarg, 0, 86400, &o.interval)) return usage_error("bad interval '%s'", optarg);
        break;
      case 'c':
        if (!number(optarg, 0, 0x7fffffff, &o.cycles))
          return usage_error("bad cycle count '%s'", optarg);
        break;
      case 'v':
        if (!number(optarg, 1, 5, &v)) return usage_error("bad view '%s' (1 to 5)", optarg);
        if (v == 4) {
          fprintf(stderr,
                  "vma_stats: view 4 (multicast groups) is not supported: Slipstream does not "
                  "publish the group table\n");
          return 2;
        }
        o.view.level = static_cast<int>(v);
        break;
      case 'd':
        if (!number(optarg, 1, 2, &v)) return usage_error("bad details mode '%s'", optarg);
        o.view.per_second = v == 2;
        break;
      case 'z':
      case 'l':
      case 'S':
      case 'D':
        fprintf(stderr,
                "vma_stats: -%c is not supported: Slipstream's library takes no requests from "
                "the reader (its statistics file is read-only to vma_stats)\n",
                opt);
        return 2;
      case 's':
        if (!parse_fd_list(optarg, &o.view.fd_ranges))
          return usage_error("bad socket list '%s'", optarg);
        break;
      case 'V':
        printf("vma_stats (Slipstream %s), file layout %u (%s)\n", PACKAGE_VERSION, kVersion,
               kProtocol);
        return 0;
      case 'h':
        printf("%s", kUsage);
        return 0;
      default:
        fprintf(stderr, "%s", kUsage);
        return 2;
    }
  }
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (o.view.per_second && o.interval == 0)
    return usage_error("-d 2 needs an interval of 1 s or more%s", "");
  return run(o);
}
