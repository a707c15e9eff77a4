// The result cache (driver/result_cache.h): store and find, what the key covers, which entries
// may answer which request, and files that are corrupt, locked or of another schema as errors.
#include "driver/result_cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ir/text.h"

namespace mugraph {
namespace {

namespace fs = std::filesystem;

const char* kLora = R"(input X : f16[4, 32]
input W : f16[32, 64]
input A : f16[32, 4]
input B : f16[4, 64]
Y1 = matmul(X, W)
T = matmul(X, A)
Y2 = matmul(T, B)
O = add(Y1, Y2)
output O
)";

ir::KernelGraph parse(const std::string& text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() /
                     ("mugraph-result-cache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

driver::CacheEntry entry(const std::string& key, const std::string& program) {
  driver::CacheEntry e;
  e.key = key;
  e.key_text = "{}";
  e.name = "lora.mu";
  e.program = program;
  e.target = "cpu";
  e.version = "test";
  e.created = 1.7e9;
  e.exhausted = true;
  e.chosen = "cand1";
  e.speedup = 1.5;
  e.verdict = "VERIFIED";
  e.device = "cpu";
  e.files = {{"best.mu", "# best\n"}, {"report.txt", "report\nwith 'quotes' and \"more\"\n"}};
  return e;
}

TEST(ResultCache, StoresFindsListsAndRemovesByPrefix) {
  const fs::path dir = temp_dir("roundtrip");
  auto c = driver::ResultCache::open((dir / "sub" / "results.sqlite").string());
  ASSERT_TRUE(c.ok()) << c.status().message();
  driver::ResultCache cache = std::move(c).value();
  auto none = cache.find("0123456789abcdef0123456789abcdef");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(cache.put(entry("aaaa0000000000000000000000000001", "p1")).ok());
  ASSERT_TRUE(cache.put(entry("aaaa0000000000000000000000000002", "p2")).ok());
  driver::CacheEntry later = entry("bbbb0000000000000000000000000003", "p3");
  later.created = 1.8e9;
  ASSERT_TRUE(cache.put(later).ok());
  auto got = cache.find("aaaa0000000000000000000000000002");
  ASSERT_TRUE(got.ok() && got->has_value());
  const driver::CacheEntry& e = **got;
  EXPECT_EQ(e.program, "p2");
  EXPECT_EQ(e.files, entry("", "").files);
  EXPECT_DOUBLE_EQ(e.speedup, 1.5);
  EXPECT_TRUE(e.exhausted);
  EXPECT_EQ(e.device, "cpu");
  auto all = cache.list();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].program, "p3");  // newest first
  // Replacing keeps one entry per key.
  driver::CacheEntry again = entry("aaaa0000000000000000000000000001", "p1 again");
  ASSERT_TRUE(cache.put(again).ok());
  EXPECT_EQ(cache.list()->size(), 3u);
  EXPECT_EQ((*cache.find(again.key))->program, "p1 again");
  EXPECT_FALSE(cache.remove("aa").ok());    // too short a prefix
  EXPECT_FALSE(cache.remove("zzzz").ok());  // not hex
  auto n = cache.remove("aaaa");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(cache.list()->size(), 1u);
  ASSERT_TRUE(cache.clear().ok());
  EXPECT_TRUE(cache.list()->empty());
  fs::remove_all(dir);
}

TEST(ResultCache, TheKeyCoversProgramShapesTargetAndOptionsButNotNames) {
  driver::OptimizeOptions o;
  o.search.target = target::local_cpu();
  const ir::KernelGraph g = parse(kLora);
  const std::string k = driver::cache_key(driver::cache_key_text(g, o));
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(k, driver::cache_key(driver::cache_key_text(parse(kLora), o)));
  // Other names and another order of independent ops: the same canonical program.
  std::string renamed = replace_all(replace_all(kLora, "Y1", "Z9"), "T ", "H ");
  renamed = replace_all(renamed, "(T,", "(H,");
  const ir::KernelGraph r = parse(renamed);
  EXPECT_EQ(k, driver::cache_key(driver::cache_key_text(r, o)));
  // ... which the entry's program text tells apart: no hit in another program's names.
  driver::CacheEntry e = entry(k, ir::print_graph(g));
  EXPECT_EQ(driver::cache_serves(e, ir::print_graph(g), 0), "");
  EXPECT_NE(driver::cache_serves(e, ir::print_graph(r), 0).find("written differently"),
            std::string::npos);
  // Shapes, dtypes, ops, target, search and optimize options all change the key.
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(
                   parse(replace_all(replace_all(kLora, "[4, 32]", "[8, 32]"), "[32, 4]",
                                     "[32, 4]")),
                   o)));
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(parse(replace_all(kLora, "f16", "f32")), o)));
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(
                   parse(replace_all(kLora, "O = add(Y1, Y2)", "O = mul(Y1, Y2)")), o)));
  driver::OptimizeOptions other = o;
  other.search.target = target::h100();
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(g, other)));
  other = o;
  other.search.max_block_ops = 7;
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(g, other)));
  other = o;
  other.search.plan = true;
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(g, other)));
  other = o;
  other.accept_unproved = true;
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(g, other)));
  other = o;
  other.top_n = 3;
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(g, other)));
  other = o;
  other.runs = 50;
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(g, other)));
  EXPECT_NE(k, driver::cache_key(driver::cache_key_text(
                   parse(replace_all(kLora, "input W : f16[32, 64]", "input W : f16[32, 64] scale=0.5")),
                   o)));
  // Execution options do not: threads, the time budget (entries record theirs, below).
  other = o;
  other.search.threads = 7;
  other.search.time_budget_s = 30;
  EXPECT_EQ(k, driver::cache_key(driver::cache_key_text(g, other)));
}

TEST(ResultCache, ACutSearchServesNoLargerBudget) {
  driver::CacheEntry e = entry("k", "p");
  EXPECT_EQ(driver::cache_serves(e, "p", 0), "");  // exhausted: any request
  EXPECT_EQ(driver::cache_serves(e, "p", 1000), "");
  e.exhausted = false;
  e.budget_s = 20;
  EXPECT_EQ(driver::cache_serves(e, "p", 10), "");
  EXPECT_EQ(driver::cache_serves(e, "p", 20), "");
  EXPECT_NE(driver::cache_serves(e, "p", 30).find("cut short under its time budget (20 s)"),
            std::string::npos);
  EXPECT_NE(driver::cache_serves(e, "p", 0).find("allows no limit"), std::string::npos);
}

TEST(ResultCache, OnlyWhatWasHandedOutWholeIsStored) {
  driver::OptimizeOptions o;
  o.search.target = target::local_cpu();
  const ir::KernelGraph g = parse(kLora);
  driver::OptimizeReport r;
  r.target = o.search.target;
  r.program.graph = g;
  r.program.label = "program";
  r.search.stop_reason = search::StopReason::kCancelled;
  auto e = driver::make_cache_entry(r, g, o, "lora.mu");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("cancelled"), std::string::npos) << e.status().message();
  r.search.stop_reason = search::StopReason::kMemoryLimit;
  EXPECT_FALSE(driver::make_cache_entry(r, g, o, "lora.mu").ok());
  r.search.stop_reason = search::StopReason::kTimeLimit;
  r.steps = {{"search", 1.0, "time limit"}, {"measure", 2.0, ""}};
  r.search.stop_reason = search::StopReason::kStateLimit;  // approximate across threads
  EXPECT_FALSE(driver::make_cache_entry(r, g, o, "lora.mu").ok());
  r.search.stop_reason = search::StopReason::kTimeLimit;
  e = driver::make_cache_entry(r, g, o, "lora.mu");  // a CPU result nothing measured
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nothing was measured"), std::string::npos);
  r.measured = true;
  r.device = "cpu";
  o.search.time_budget_s = 12;
  // An exhausted search with every step whole serves any budget; anything cut (a measuring
  // step shortened, a variant the budget left unmeasured) makes it budget-bound.
  r.search.stop_reason = search::StopReason::kExhausted;
  r.steps = {{"search", 1.0, ""}, {"measure", 2.0, ""}};
  e = driver::make_cache_entry(r, g, o, "lora.mu");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->exhausted);
  r.steps = {{"search", 1.0, ""}, {"measure", 2.0, "timing rounds shortened"}};
  e = driver::make_cache_entry(r, g, o, "lora.mu");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_FALSE(e->exhausted);
  r.steps = {{"search", 1.0, ""}, {"measure", 2.0, ""}};
  r.complete = false;
  e = driver::make_cache_entry(r, g, o, "lora.mu");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_FALSE(e->exhausted);
  r.complete = true;
  r.search.stop_reason = search::StopReason::kTimeLimit;
  e = driver::make_cache_entry(r, g, o, "lora.mu");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_FALSE(e->exhausted);
  EXPECT_EQ(e->budget_s, 12);
  EXPECT_EQ(e->chosen, "program");
  EXPECT_EQ(e->program, ir::print_graph(g));
  EXPECT_EQ(e->key, driver::cache_key(driver::cache_key_text(g, o)));
  bool has_best = false;
  for (const auto& [name, text] : e->files) has_best |= name == "best.mu";
  EXPECT_TRUE(has_best);
}

TEST(ResultCache, ACutEntryNeverReplacesABetterOneAndTheKeyTextMustMatch) {
  const fs::path dir = temp_dir("upsert");
  auto c = driver::ResultCache::open((dir / "results.sqlite").string());
  ASSERT_TRUE(c.ok()) << c.status().message();
  driver::ResultCache cache = std::move(c).value();
  driver::OptimizeOptions o;
  o.search.target = target::local_cpu();
  const ir::KernelGraph g = parse(kLora);
  driver::CacheEntry full = entry(driver::cache_key(driver::cache_key_text(g, o)),
                                  ir::print_graph(g));
  full.key_text = driver::cache_key_text(g, o);
  ASSERT_TRUE(cache.put(full).ok());
  driver::CacheEntry cut = full;
  cut.exhausted = false;
  cut.budget_s = 100;
  cut.chosen = "cand2";
  ASSERT_TRUE(cache.put(cut).ok());
  EXPECT_EQ((*cache.find(full.key))->chosen, "cand1");  // the exhausted one stays
  std::string why;
  auto hit = driver::cache_lookup(cache, g, o, &why);
  ASSERT_TRUE(hit.ok() && hit->has_value()) << why;
  // Same key, other key text (what a hash collision would look like): no hit.
  driver::CacheEntry forged = full;
  forged.key_text = "{\"another\": \"program\"}";
  forged.created += 1;
  ASSERT_TRUE(cache.put(forged).ok());
  hit = driver::cache_lookup(cache, g, o, &why);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());
  EXPECT_NE(why.find("key text differs"), std::string::npos) << why;
  // Cut entries: a larger budget replaces a smaller one, not the other way.
  driver::CacheEntry cut20 = full;
  cut20.key = "dddd0000000000000000000000000001";
  cut20.exhausted = false;
  cut20.budget_s = 20;
  ASSERT_TRUE(cache.put(cut20).ok());
  driver::CacheEntry cut10 = cut20;
  cut10.budget_s = 10;
  ASSERT_TRUE(cache.put(cut10).ok());
  EXPECT_EQ((*cache.find(cut20.key))->budget_s, 20);
  driver::CacheEntry cut30 = cut20;
  cut30.budget_s = 30;
  ASSERT_TRUE(cache.put(cut30).ok());
  EXPECT_EQ((*cache.find(cut20.key))->budget_s, 30);
  fs::remove_all(dir);
}

TEST(ResultCache, ACorruptFileIsAnErrorNotACrash) {
  const fs::path dir = temp_dir("corrupt");
  const fs::path f = dir / "results.sqlite";
  std::ofstream(f) << std::string(4096, '\x5a');
  auto c = driver::ResultCache::open(f.string());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("results.sqlite': cannot read"), std::string::npos)
      << c.status().message();
  fs::remove_all(dir);
}

TEST(ResultCache, AnotherSchemaVersionIsLeftAlone) {
  const fs::path dir = temp_dir("schema");
  const fs::path f = dir / "results.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(f.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto c = driver::ResultCache::open(f.string());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("schema version 7"), std::string::npos)
      << c.status().message();
  fs::remove_all(dir);
}

TEST(ResultCache, ALockHeldPastTheBusyTimeoutIsAnErrorAndThenWritesGoOn) {
  const fs::path dir = temp_dir("locked");
  const fs::path f = dir / "results.sqlite";
  auto c = driver::ResultCache::open(f.string(), 50);
  ASSERT_TRUE(c.ok()) << c.status().message();
  driver::ResultCache cache = std::move(c).value();
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(f.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const Status s = cache.put(entry("cccc0000000000000000000000000001", "p"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("locked"), std::string::npos) << s.message();
  // Readers are not blocked by a writer (WAL).
  EXPECT_TRUE(cache.list().ok());
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_TRUE(cache.put(entry("cccc0000000000000000000000000001", "p")).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mugraph
