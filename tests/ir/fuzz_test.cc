// Seeded fuzzing of the two parsers: random mutations of every example (deleted spans, inserted
// punctuation, swapped characters, numbers replaced by edge values) must give either a graph or
// an error message, never an exception or a crash. Every mutant that parses must round-trip
// through the text and JSON forms. Deterministic: the same seed gives the same mutants.
#include "ir/json.h"
#include "ir/memory.h"
#include "support/rng.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::example_names;
using mugraph::testing::example_path;
using mugraph::testing::read_file;

constexpr int kMutantsPerExample = 400;

std::string mutate(std::string s, Rng& rng) {
  static const std::string kInsert = "(){}[],=:/#-0123456789 xyzphi\n";
  static const char* kNumbers[] = {"0", "-1", "1", "3", "7", "4294967297", "1099511627776",
                                   "9223372036854775807", "-9223372036854775808"};
  const int edits = 1 + static_cast<int>(rng.below(3));
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng.below(s.size());
    switch (rng.below(4)) {
      case 0:  // delete a short span
        s.erase(at, 1 + rng.below(5));
        break;
      case 1:  // insert a character the grammar cares about
        s.insert(at, 1, kInsert[rng.below(kInsert.size())]);
        break;
      case 2:  // swap two characters
        std::swap(s[at], s[rng.below(s.size())]);
        break;
      default: {  // replace the next number by an edge value
        const size_t d = s.find_first_of("0123456789", at);
        if (d == std::string::npos) break;
        const size_t end = s.find_first_not_of("0123456789", d);
        s.replace(d, (end == std::string::npos ? s.size() : end) - d, kNumbers[rng.below(9)]);
      }
    }
  }
  return s;
}

void check_parsed(const KernelGraph& g) {
  auto again = parse_graph(print_graph(g));
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << print_graph(g);
  EXPECT_EQ(*again, g);
  auto back = from_json(to_json(g));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, g);
  (void)check_memory(g, MemoryLimits{int64_t{1} << 40, 1 << 20, 255});
}

TEST(Fuzz, TextParserNeverCrashes) {
  Rng rng(2026);
  int parsed = 0, rejected = 0;
  for (const std::string& name : example_names()) {
    const std::string text = read_file(example_path(name));
    for (int i = 0; i < kMutantsPerExample; ++i) {
      const std::string m = mutate(text, rng);
      auto g = parse_graph(m);
      if (!g.ok()) {
        ++rejected;
        EXPECT_FALSE(g.status().message().empty());
        continue;
      }
      ++parsed;
      check_parsed(*g);
    }
  }
  // Both outcomes must occur, or the mutations are not exercising anything.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 1000);
}

TEST(Fuzz, JsonLoaderNeverCrashes) {
  Rng rng(7);
  int parsed = 0, rejected = 0;
  for (const std::string& name : example_names()) {
    auto g = parse_graph(read_file(example_path(name)));
    ASSERT_TRUE(g.ok());
    const std::string text = to_json(*g, -1);
    for (int i = 0; i < kMutantsPerExample; ++i) {
      auto h = from_json(mutate(text, rng));
      if (!h.ok()) {
        ++rejected;
        continue;
      }
      ++parsed;
      check_parsed(*h);
    }
  }
  EXPECT_GT(parsed, 50);
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace mugraph::ir
