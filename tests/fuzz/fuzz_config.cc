// Fuzz target: configuration values, as every registered settings table
// (core, rsocket, preload, vma) reads them. The input, split at NUL bytes,
// gives one text per row; each text reaches the real code three ways: the
// row's parser (parse_value), the loader through each of the value sources
// (environment, the VMA table's VMA_SPEC profile, an added rules-style
// source, the one-value files of the configuration directory, read by
// read_small_file), and the readers of a loaded value (get_string, origin,
// the listing's texts).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/base/config.h"
#include "core/base/config_parse.h"

namespace {

using namespace ss::config;

std::vector<std::string> g_texts;
std::string g_dir;  // the configuration directory the files go to

const std::string& text_for(int row) { return g_texts[row % g_texts.size()]; }

// A rules-style source (as libvma.conf will be): row i's text, "" meaning
// "nothing here" and a text starting with 0x01 a source that failed.
class FuzzSource final : public ValueSource {
 public:
  Source kind() const override { return Source::kRules; }
  long lookup(const Component& c, const Setting& s, char* text, size_t cap, char* origin,
              size_t ocap) const override {
    const std::string& t = text_for(s.id + 1);
    if (t.empty()) return -ENOENT;
    if (t[0] == '\x01') return -EIO;
    snprintf(origin, ocap, "fuzz:%s", c.name());
    const size_t n = t.size() < cap - 1 ? t.size() : cap - 1;
    memcpy(text, t.data(), n);
    text[n] = '\0';
    return n < t.size() ? -EFBIG : static_cast<long>(n);
  }
};
const FuzzSource g_source;

int components_now(Component** out) {
  static Component* all[16];
  static int n = 0;
  if (!n) {
    n = components(all, 16);
    if (n > 16) n = 16;
  }
  for (int i = 0; i < n; i++) out[i] = all[i];
  return n;
}

void write_file(const std::string& path, const std::string& text) {
  if (FILE* f = fopen(path.c_str(), "we")) {
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/slipstream-fuzz-config.XXXXXX";
  if (!mkdtemp(tmpl)) abort();
  g_dir = tmpl;
  atexit([] { rmdir(g_dir.c_str()); });  // its files go with each input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g_texts.clear();
  const char* p = reinterpret_cast<const char*>(data);
  const char* end = p + size;
  for (;;) {
    const char* nul = static_cast<const char*>(memchr(p, '\0', end - p));
    g_texts.emplace_back(p, nul ? nul : end);
    if (!nul) break;
    p = nul + 1;
  }

  Component* comps[16];
  const int ncomp = components_now(comps);
  std::vector<std::pair<std::string, std::string>> envs;  // name, value before (or "\0")
  std::vector<std::string> files;
  auto set_env = [&envs](const char* name, const char* value) {
    const char* old = getenv(name);
    envs.emplace_back(name, old ? old : std::string(1, '\0'));
    setenv(name, value, 1);
  };
  for (int k = 0; k < ncomp; k++) {
    Component& c = *comps[k];
    for (int i = 0; i < c.count(); i++) {
      const Setting& s = *c.row(i);
      const std::string& t = text_for(s.id);
      // The row's parser alone.
      int64_t iv = 0;
      char str[kStrCap];
      parse_value(s, t.data(), t.size(), &iv, str, sizeof str);
      // The row's environment name (a text with a NUL cannot be one).
      if (s.env[0] && !t.empty() && (t[0] & 1)) {
        set_env(s.env[0], t.c_str() + 1);
      }
      // The row's one-value file.
      if (s.file && c.dir_row() >= 0 && !t.empty() && (t[0] & 2)) {
        files.push_back(g_dir + "/" + s.file);
        write_file(files.back(), t.substr(1));
      }
    }
    // The directory row names our directory (unless its environment was
    // given a text above).
    if (c.dir_row() >= 0 && c.row(c.dir_row())->env[0] && !getenv(c.row(c.dir_row())->env[0])) {
      set_env(c.row(c.dir_row())->env[0], g_dir.c_str());
    }
  }
  // Loads every table from these sources, then with the rules source too.
  reload();
  for (int k = 0; k < ncomp; k++) {
    Component& c = *comps[k];
    if (c.add_source(&g_source) == 0) {
      for (int i = 0; i < c.count(); i++) {
        (void)c.get_string(i);
        (void)c.origin(i);
        (void)c.source(i);
        (void)c.env_int(i);
      }
      c.remove_source(&g_source);
    }
  }
  // Back as they were, the last set first (a name may be set twice).
  for (auto e = envs.rbegin(); e != envs.rend(); ++e) {
    if (e->second == std::string(1, '\0'))
      unsetenv(e->first.c_str());
    else
      setenv(e->first.c_str(), e->second.c_str(), 1);
  }
  for (const std::string& f : files) unlink(f.c_str());
  return 0;
}
