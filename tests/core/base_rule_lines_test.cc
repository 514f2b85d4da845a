// The rules files' line reader (core/base/rule_lines.h): line numbers count
// every line, comments and blank lines are skipped, words split on blanks,
// rest() keeps the line's tail, and a line of too many words is flagged.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/rule_lines.h"

namespace ss::config {
namespace {

struct Seen {
  int number;
  std::vector<std::string> words;
  std::string rest2;
  bool too_many;
};

std::vector<Seen> read(std::string_view text) {
  std::vector<Seen> out;
  for_each_rule_line(text, [&](const RuleLine& l) {
    Seen s{l.number, {}, std::string(l.rest(2)), l.too_many};
    for (int i = 0; i < l.count; ++i) s.words.emplace_back(l.word[i]);
    out.push_back(s);
  });
  return out;
}

TEST(RuleLines, NumbersWordsAndComments) {
  const auto v = read("# comment\n\n  a  b\tc d # tail\r\n   \n#x\nlast line");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].number, 3);
  EXPECT_EQ(v[0].words, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(v[0].rest2, "c d");
  EXPECT_EQ(v[1].number, 6);
  EXPECT_EQ(v[1].words, (std::vector<std::string>{"last", "line"}));
  EXPECT_EQ(v[1].rest2, "");
}

TEST(RuleLines, TooManyWords) {
  std::string line;
  for (int i = 0; i <= RuleLine::kMaxWords; ++i) line += "w ";
  const auto v = read(line);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].too_many);
  EXPECT_EQ(v[0].words.size(), size_t(RuleLine::kMaxWords));
  EXPECT_FALSE(read("a b c")[0].too_many);
}

TEST(RuleLines, EmptyAndCommentOnly) {
  EXPECT_TRUE(read("").empty());
  EXPECT_TRUE(read("\n\n# only\n   # indented\n").empty());
}

}  // namespace
}  // namespace ss::config
