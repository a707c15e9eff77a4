#include "driver/result_cache.h"

#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "driver/version.h"
#include "ir/canonical.h"
#include "ir/text.h"
#include "runtime/cuda_driver.h"
#include "search/checkpoint.h"
#include "support/hash.h"
#include "support/memory.h"

namespace mugraph::driver {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The schema's version (PRAGMA user_version): a file of another version is left alone.
constexpr int kSchemaVersion = 1;

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

Status sql_error(sqlite3* db, const std::string& path, const std::string& what) {
  return error("result cache '", path, "': ", what, ": ",
               db != nullptr ? sqlite3_errmsg(db) : "out of memory");
}

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return s_; }
  void text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void real(int i, double v) { sqlite3_bind_double(s_, i, v); }
  std::string col_text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t == nullptr ? "" : std::string(reinterpret_cast<const char*>(t),
                                           static_cast<size_t>(sqlite3_column_bytes(s_, i)));
  }
  double col_real(int i) const { return sqlite3_column_double(s_, i); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

// Runs `sql`. A lock that SQLite reports at once, without waiting in its busy handler (it does
// so where waiting could deadlock, e.g. two connections switching a new file to WAL together),
// is retried here for up to `retry_ms`.
Status exec(sqlite3* db, const std::string& path, const char* sql, int retry_ms = 0) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry_ms);
  for (;;) {
    char* msg = nullptr;
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
    if (rc == SQLITE_OK) return ok_status();
    std::string m = msg != nullptr ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
      return error("result cache '", path, "': ", m);
    if (std::chrono::steady_clock::now() >= until) return error("result cache '", path, "': ", m);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

constexpr const char* kColumns =
    "key, key_text, name, program, target, version, created, budget_s, exhausted, chosen, "
    "speedup, verdict, device";

CacheEntry read_row(const Stmt& s) {
  CacheEntry e;
  e.key = s.col_text(0);
  e.key_text = s.col_text(1);
  e.name = s.col_text(2);
  e.program = s.col_text(3);
  e.target = s.col_text(4);
  e.version = s.col_text(5);
  e.created = s.col_real(6);
  e.budget_s = s.col_real(7);
  e.exhausted = s.col_real(8) != 0;
  e.chosen = s.col_text(9);
  e.speedup = s.col_real(10);
  e.verdict = s.col_text(11);
  e.device = s.col_text(12);
  return e;
}

}  // namespace

std::string cache_key_text(const ir::KernelGraph& program, const OptimizeOptions& o) {
  const json j = {
      {"version", version()},
      {"program", hex64(ir::canonical_hash(program))},
      {"input_scales", program.input_scales},
      {"search", json::parse(search::space_options_text(o.search))},
      {"plan", o.search.plan},
      {"max_states", o.search.max_states},
      {"certify", o.search.certify},
      {"search_certify_tries", o.search.certify_tries},
      {"memory_budget", memory_budget()},
      {"optimize",
       {{"top_n", o.top_n},
        {"runs", o.runs},
        {"max_rounds", o.max_rounds},
        {"max_spread", o.max_spread},
        {"measure_time_s", o.measure_time_s},
        {"min_gain", o.min_gain},
        {"min_sample_s", o.min_sample_s},
        {"seed", o.seed},
        {"cpu_threads", o.cpu_threads},
        {"cuda_graphs", o.cuda_graphs},
        {"certify_tries", o.certify_tries},
        {"accept_unproved", o.accept_unproved},
        {"certify_delta", o.certify.delta},
        {"certify_seed", o.certify.seed}}}};
  return j.dump();
}

std::string cache_key(const std::string& key_text) {
  // Two 64-bit FNV-1a hashes with different offset bases: 128 bits.
  return hex64(fnv1a64(key_text)) + hex64(fnv1a64(key_text, 0x84222325cbf29ce4ULL));
}

namespace {
// The name of this machine's GPU 0, or "" without one (opens the driver: called only for
// GPU-target entries).
std::string current_gpu() {
  auto dev = runtime::open_cuda_device(0);
  return dev.ok() ? dev.value()->name() : "";
}
}  // namespace

std::string cache_serves(const CacheEntry& e, const std::string& program_text, double budget_s) {
  if (e.program != program_text)
    return "the cached entry is for the same program written differently (other tensor names, "
           "op order or input scales)";
  if (e.target != "cpu") {
    const std::string gpu = current_gpu();
    if (!gpu.empty() && e.device.empty())
      return "the cached result was ranked by the cost model alone (no GPU where it ran); this "
             "machine has a GPU to measure on";
    if (!gpu.empty() && e.device != gpu)
      return "the cached result was measured on " + e.device + ", this machine has " + gpu;
  }
  if (e.exhausted) return "";
  if (budget_s > 0 && e.budget_s >= budget_s) return "";
  std::ostringstream why;
  why << "the cached result was cut short under its time budget (" << e.budget_s
      << " s); this request allows " << (budget_s > 0 ? std::to_string(budget_s) + " s" : "no limit");
  return why.str();
}

Result<std::optional<CacheEntry>> cache_lookup(const ResultCache& cache,
                                               const ir::KernelGraph& program,
                                               const OptimizeOptions& o, std::string* why) {
  const std::string key_text = cache_key_text(program, o);
  MG_ASSIGN_OR_RETURN(std::optional<CacheEntry> e, cache.find(cache_key(key_text)));
  if (!e) return e;
  // The key is a hash: the entry must hold the same key text (no collision can answer).
  std::string no = e->key_text != key_text
                       ? "the cached entry's key text differs (a hash collision)"
                       : cache_serves(*e, ir::print_graph(program), o.search.time_budget_s);
  if (no.empty() && (cache_file(*e, "best.mu") == nullptr || cache_file(*e, "report.txt") == nullptr))
    no = "the cached entry lacks its best.mu or report";
  if (no.empty()) return e;
  if (why != nullptr) *why = no;
  return std::optional<CacheEntry>();
}

const std::string* cache_file(const CacheEntry& e, const std::string& name) {
  for (const auto& [n, text] : e.files)
    if (n == name) return &text;
  return nullptr;
}

Result<CacheEntry> make_cache_entry(const OptimizeReport& r, const ir::KernelGraph& program,
                                    const OptimizeOptions& o, const std::string& name) {
  const search::StopReason stop = r.search.stop_reason;
  if (stop != search::StopReason::kExhausted && stop != search::StopReason::kTimeLimit)
    return error("not stored: the search stopped early (", search::stop_reason_name(stop), ")");
  if (r.target.kind == target::Kind::kCpu && !r.measured)
    return error("not stored: nothing was measured");
  // Anything cut short (the search, measuring, certify, by the time or memory budget) makes
  // the entry what this budget gives: it serves requests with no larger budget only.
  bool cut = stop != search::StopReason::kExhausted || !r.complete;
  for (const OptimizeReport::Step& s : r.steps) cut |= !s.cut.empty();
  CacheEntry e;
  e.key_text = cache_key_text(program, o);
  e.key = cache_key(e.key_text);
  e.name = name;
  e.program = ir::print_graph(program);
  e.target = r.target.name;
  e.version = version();
  e.created = std::chrono::duration<double>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
  e.budget_s = r.budget_s > 0 ? r.budget_s : o.search.time_budget_s;
  e.exhausted = !cut;
  e.chosen = r.chosen().label;
  e.speedup = !r.measured ? 0.0 : r.best < 0 ? 1.0 : r.chosen().speedup;
  e.device = r.device;
  e.verdict = r.best < 0 ? "the program itself"
                         : std::string(verify::verdict_name(r.certified.kind));
  e.files = optimize_files(r, program);
  return e;
}

std::string default_result_cache_path() {
  // cpu_backend.cc's default_cache_dir(b) is <cache dir>/b.
  return (fs::path(default_cache_dir("results")).parent_path() / "results.sqlite").string();
}

Result<ResultCache> ResultCache::open(const std::string& path, int busy_timeout_ms) {
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return error("result cache '", path, "': cannot create its directory: ", ec.message());
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    Status s = sql_error(db, path, "cannot open");
    sqlite3_close(db);
    return s;
  }
  ResultCache c(db, path);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  // Reads the header first: a file that is not a database fails here.
  int version = -1;
  {
    Stmt s(db, "PRAGMA user_version");
    if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW)
      return sql_error(db, path, "cannot read (not a mugraph result cache?)");
    version = static_cast<int>(sqlite3_column_int(s.get(), 0));
  }
  if (version != 0 && version != kSchemaVersion)
    return error("result cache '", path, "': schema version ", version, ", this mugraph reads ",
                 kSchemaVersion, " (another mugraph's file: set MUGRAPH_CACHE_DIR or run "
                 "`mugraph cache clear`)");
  MG_RETURN_IF_ERROR(exec(db, path, "PRAGMA journal_mode=WAL", busy_timeout_ms));
  MG_RETURN_IF_ERROR(exec(db, path,
                          "CREATE TABLE IF NOT EXISTS results ("
                          "key TEXT PRIMARY KEY, key_text TEXT, name TEXT, program TEXT, "
                          "target TEXT, version TEXT, created REAL, budget_s REAL, "
                          "exhausted INTEGER, chosen TEXT, speedup REAL, verdict TEXT, "
                          "device TEXT, files TEXT)",
                          busy_timeout_ms));
  if (version == 0) MG_RETURN_IF_ERROR(exec(db, path, "PRAGMA user_version=1", busy_timeout_ms));
  return c;
}

ResultCache::ResultCache(ResultCache&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) {
  o.db_ = nullptr;
}

ResultCache& ResultCache::operator=(ResultCache&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

ResultCache::~ResultCache() { sqlite3_close(db_); }

Result<std::optional<CacheEntry>> ResultCache::find(const std::string& key) const {
  Stmt s(db_, (std::string("SELECT ") + kColumns + ", files FROM results WHERE key = ?").c_str());
  if (!s.ok()) return sql_error(db_, path_, "cannot read");
  s.text(1, key);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<CacheEntry>();
  if (rc != SQLITE_ROW) return sql_error(db_, path_, "cannot read");
  CacheEntry e = read_row(s);
  try {
    for (const auto& f : json::parse(s.col_text(13)))
      e.files.emplace_back(f.at(0).get<std::string>(), f.at(1).get<std::string>());
  } catch (const json::exception& x) {
    return error("result cache '", path_, "': entry ", key, " is damaged: ", x.what());
  }
  return std::optional<CacheEntry>(std::move(e));
}

Status ResultCache::put(const CacheEntry& e) {
  json files = json::array();
  for (const auto& [name, text] : e.files) files.push_back({name, text});
  // An entry is replaced only by one that serves at least as much: an exhausted search, or a
  // cut one with no smaller budget than a cut one stored.
  Stmt s(db_, (std::string("INSERT INTO results (") + kColumns +
               ", files) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT(key) DO UPDATE SET key_text = excluded.key_text, "
               "name = excluded.name, program = excluded.program, target = excluded.target, "
               "version = excluded.version, created = excluded.created, "
               "budget_s = excluded.budget_s, exhausted = excluded.exhausted, "
               "chosen = excluded.chosen, speedup = excluded.speedup, "
               "verdict = excluded.verdict, device = excluded.device, files = excluded.files "
               "WHERE excluded.exhausted = 1 OR "
               "(results.exhausted = 0 AND excluded.budget_s >= results.budget_s)")
                  .c_str());
  if (!s.ok()) return sql_error(db_, path_, "cannot write");
  s.text(1, e.key);
  s.text(2, e.key_text);
  s.text(3, e.name);
  s.text(4, e.program);
  s.text(5, e.target);
  s.text(6, e.version);
  s.real(7, e.created);
  s.real(8, e.budget_s);
  s.real(9, e.exhausted ? 1 : 0);
  s.text(10, e.chosen);
  s.real(11, e.speedup);
  s.text(12, e.verdict);
  s.text(13, e.device);
  // Generated sources and notes may hold bytes that are not UTF-8 (a compiler's message):
  // replaced, never an exception.
  s.text(14, files.dump(-1, ' ', false, json::error_handler_t::replace));
  if (sqlite3_step(s.get()) != SQLITE_DONE) return sql_error(db_, path_, "cannot write");
  return ok_status();
}

Result<std::vector<CacheEntry>> ResultCache::list() const {
  Stmt s(db_, (std::string("SELECT ") + kColumns + " FROM results ORDER BY created DESC").c_str());
  if (!s.ok()) return sql_error(db_, path_, "cannot read");
  std::vector<CacheEntry> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(read_row(s));
  if (rc != SQLITE_DONE) return sql_error(db_, path_, "cannot read");
  return out;
}

Result<int> ResultCache::remove(const std::string& prefix) {
  if (prefix.size() < 4) return error("a key prefix needs at least 4 hex digits, got '", prefix, "'");
  for (char c : prefix)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return error("'", prefix, "' is not a key prefix (hex digits)");
  Stmt s(db_, "DELETE FROM results WHERE substr(key, 1, ?) = ?");
  if (!s.ok()) return sql_error(db_, path_, "cannot write");
  sqlite3_bind_int(s.get(), 1, static_cast<int>(prefix.size()));
  s.text(2, prefix);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return sql_error(db_, path_, "cannot write");
  return sqlite3_changes(db_);
}

Status ResultCache::clear() { return exec(db_, path_, "DELETE FROM results"); }

}  // namespace mugraph::driver
