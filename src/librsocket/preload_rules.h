// The rules of preload_config (preload_rules.cc): read from an open file,
// and asked whether a socket is taken. Split from the file's one reader so
// a test (tests/fuzz) drives the same parser.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace ss::rs {

struct PreloadRule {
  std::string program;         // "*" or a case-insensitive prefix of the program's name
  int domain, type, protocol;  // -1: any
};

// Every rule of the file `f` (named `path` in warnings): a line that is
// not a rule is warned about and skipped; comments and blank lines are not.
std::vector<PreloadRule> read_preload_rules(FILE* f, const char* path);

// Whether a socket(domain, type, protocol) of program `prog` is taken:
// the first matching rule takes it; no rules at all take everything.
bool preload_rules_take(const std::vector<PreloadRule>& rules, const char* prog, int domain,
                        int type, int protocol);

}  // namespace ss::rs
