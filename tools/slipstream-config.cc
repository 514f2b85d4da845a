// slipstream-config: lists every setting from the one table, with its current
// value and where that value came from, so an admin can see what a program
// started from this environment would use.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/base/config.h"
#include "core/base/config_parse.h"

namespace {

void usage(FILE* out) {
  fprintf(out,
          "Usage: slipstream-config [--help]\n"
          "\n"
          "Prints every Slipstream setting: its name, environment variable, file,\n"
          "current value and where that value came from (default, env NAME or\n"
          "file PATH), its default, bounds and help. A value in the environment\n"
          "wins over one in a file, which wins over the default. A bad value is\n"
          "reported on stderr and the default is used.\n");
}

std::string where(ss::config::Id id) {
  switch (ss::config::source(id)) {
    case ss::config::Source::kDefault: return "default";
    case ss::config::Source::kEnv: return ss::config::origin(id);
    case ss::config::Source::kFile: return "file " + ss::config::origin(id);
  }
  return "?";
}

std::string default_text(const ss::config::Setting& s) {
  switch (s.type) {
    case ss::config::Type::kInt: return std::to_string(s.def);
    case ss::config::Type::kString: return s.str_def ? s.str_def : "";
    case ss::config::Type::kEnum: {
      char name[64];
      if (ss::config::choice_at(s.str_def, s.def, name, sizeof name)) return name;
      return std::to_string(s.def);
    }
  }
  return "";
}

std::string bounds_text(const ss::config::Setting& s) {
  switch (s.type) {
    case ss::config::Type::kInt: {
      std::string b = std::to_string(s.min) + ".." + std::to_string(s.max);
      if (s.str_def) b += " or " + std::string(s.str_def);
      return b;
    }
    case ss::config::Type::kEnum: return s.str_def ? s.str_def : "";
    case ss::config::Type::kString: return "a path";
  }
  return "";
}

void print(const ss::config::Setting& s, const std::string& conf_dir) {
  printf("%s = %s\n", s.name, ss::config::get_string(s.id).c_str());
  printf("    source:  %s\n", where(s.id).c_str());
  if (s.env) printf("    env:     %s\n", s.env);
  if (s.file) printf("    file:    %s/%s\n", conf_dir.c_str(), s.file);
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
  int n = 0;
  const ss::config::Setting* rows = ss::config::table(&n);
  const std::string conf_dir = ss::config::get_string(ss::config::Id::kRsConfDir);
  for (int i = 0; i < n; ++i) {
    if (i) printf("\n");
    print(rows[i], conf_dir);
  }
  return 0;
}
