// slipstream-config: lists every component's settings from their tables,
// with the current value and where it came from, so an admin can see what a
// program started from this environment would use. Linked with every face,
// whose tables register themselves when the library loads.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/base/config.h"
#include "core/base/config_parse.h"

namespace {

using ss::config::Component;
using ss::config::Setting;
using ss::config::Source;
using ss::config::Type;

void usage(FILE* out) {
  fprintf(out,
          "Usage: slipstream-config [--help]\n"
          "\n"
          "Prints every Slipstream setting, component by component: its name,\n"
          "environment variables, file, current value and where that value came\n"
          "from (default, env NAME, file PATH or a profile such as\n"
          "VMA_SPEC=latency), its default, bounds and help. The first\n"
          "environment variable set wins, then a profile, then a file, then\n"
          "the default. A bad value is reported on stderr and the default is\n"
          "used.\n");
}

std::string where(Component& c, int i) {
  switch (c.source(i)) {
    case Source::kDefault:
      return "default";
    case Source::kEnv:
    case Source::kRules:
      return c.origin(i);
    case Source::kFile:
      return "file " + c.origin(i);
  }
  return "?";
}

std::string env_text(const Setting& s) {
  std::string t;
  for (const char* e : s.env) {
    if (!e) break;
    if (!t.empty()) t += ", ";
    t += e;
  }
  if (s.env[0] && s.env[1]) t += " (the first set wins)";
  return t;
}

std::string default_text(const Setting& s) {
  switch (s.type) {
    case Type::kInt:
      return std::to_string(s.def);
    case Type::kString:
      return s.str_def ? s.str_def : "";
    case Type::kEnum: {
      char name[64];
      if (ss::config::choice_at(s.str_def, s.def, name, sizeof name)) return name;
      return std::to_string(s.def);
    }
  }
  return "";
}

std::string bounds_text(const Setting& s) {
  switch (s.type) {
    case Type::kInt: {
      std::string b = std::to_string(s.min) + ".." + std::to_string(s.max);
      if (s.unit != ss::config::Unit::kNone) b += " " + std::string(ss::config::unit_text(s.unit));
      if (s.str_def) b += " or " + std::string(s.str_def);
      return b;
    }
    case Type::kEnum:
      return s.str_def ? s.str_def : "";
    case Type::kString:
      return "a path";
  }
  return "";
}

void print(Component& c, int i, const std::string& dir) {
  const Setting& s = *c.row(i);
  printf("%s = %s\n", s.name, c.get_string(i).c_str());
  printf("    source:  %s\n", where(c, i).c_str());
  if (s.env[0]) printf("    env:     %s\n", env_text(s).c_str());
  if (s.file && !dir.empty()) printf("    file:    %s/%s\n", dir.c_str(), s.file);
  printf("    default: %s\n", default_text(s).c_str());
  printf("    bounds:  %s\n", bounds_text(s).c_str());
  printf("    help:    %s\n", s.help);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    fprintf(stderr, "slipstream-config: unknown argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
  }
  constexpr int kMax = 16;
  Component* list[kMax];
  const int n = std::min(ss::config::components(list, kMax), kMax);
  for (int k = 0; k < n; ++k) {
    Component& c = *list[k];
    printf("%s[%s]\n", k ? "\n" : "", c.name());
    const std::string dir = c.dir_row() >= 0 ? c.get_string(c.dir_row()) : "";
    for (int i = 0; i < c.count(); ++i) {
      printf("\n");
      print(c, i, dir);
    }
  }
  return 0;
}
