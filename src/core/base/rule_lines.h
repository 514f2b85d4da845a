// The line reader shared by the rules files (librspreload's preload_config,
// libvmacompat's libvma.conf): splits text into numbered lines of
// whitespace-separated words, with `#` starting a comment that runs to the
// end of the line; blank and comment-only lines are skipped. Each file's
// grammar then reads the words of one line. Header-only: both faces compile
// it in, so nothing crosses libslipstream's ABI.
#pragma once
#include <cstddef>
#include <string_view>

namespace ss::config {

struct RuleLine {
  static constexpr int kMaxWords = 16;
  int number = 0;         // 1-based line number in the text
  int count = 0;          // words found (at most kMaxWords are kept)
  bool too_many = false;  // more than kMaxWords words: the line is no rule
  std::string_view word[kMaxWords];
  std::string_view text;  // the line without its comment, trimmed

  // The text from word i to the end of the line (comment excluded), "" when
  // there is no word i.
  std::string_view rest(int i) const {
    if (i >= count) return {};
    return text.substr(static_cast<size_t>(word[i].data() - text.data()));
  }
};

inline bool rule_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// Calls on_line(const RuleLine&) for every line of `text` holding a word.
template <typename F>
void for_each_rule_line(std::string_view text, F&& on_line) {
  int number = 0;
  while (!text.empty()) {
    ++number;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    line = line.substr(0, line.find('#'));
    while (!line.empty() && rule_space(line.back())) line.remove_suffix(1);
    while (!line.empty() && rule_space(line.front())) line.remove_prefix(1);
    if (line.empty()) continue;
    RuleLine l;
    l.number = number;
    l.text = line;
    for (size_t i = 0; i < line.size();) {
      if (rule_space(line[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && !rule_space(line[j])) ++j;
      if (l.count == RuleLine::kMaxWords) {
        l.too_many = true;
        break;
      }
      l.word[l.count++] = line.substr(i, j - i);
      i = j;
    }
    on_line(static_cast<const RuleLine&>(l));
  }
}

}  // namespace ss::config
