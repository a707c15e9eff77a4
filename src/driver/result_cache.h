// The persistent result cache of `optimize` (issue 21): one SQLite file (WAL mode, so several
// processes read and write it at once), `results.sqlite` under $MUGRAPH_CACHE_DIR (else
// $XDG_CACHE_HOME/mugraph, else ~/.cache/mugraph).
//
// Key: a 128-bit hash of the key text, which holds the program's canonical hash
// (ir/canonical.h: ops, attributes, shapes, dtypes, strides; not tensor names or op order),
// the target's name and numbers, every search option that changes the space or its results
// (search/checkpoint.h's space options, plus planning and certify), the optimize options that
// change the choice (variants measured, the unproven opt-in, the least gain) and the mugraph
// version (driver/version.h). The entry also keeps the program's text: a hit needs the same
// text, so a program written differently (other names, other op order) searches again rather
// than receive a uGraph in another program's names.
//
// A result where anything was cut short (the search, measuring or certify, by the time or memory
// budget) serves only requests with no larger budget; one where nothing was cut serves all. What is stored is what optimize handed out (best.mu and its
// verdict, the generated source, the report), so a hit hands out exactly that again.
//
// Errors (a corrupt file, a lock held past the busy timeout, a full disk) come back as a
// Status; the caller warns and searches without the cache. Never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "driver/optimize.h"
#include "support/status.h"

struct sqlite3;

namespace mugraph::driver {

struct CacheEntry {
  std::string key;         // 32 hex digits
  std::string key_text;    // what the key hashes (JSON)
  std::string name;        // the program's file name, for `mugraph cache ls`
  std::string program;     // the program's text (ir::print_graph)
  std::string target;      // target name
  std::string version;     // mugraph version that stored it
  double created = 0;      // seconds since the epoch
  double budget_s = 0;     // the optimize time budget it ran under (0: none)
  bool exhausted = false;  // nothing was cut short: the search exhausted, every step whole
  std::string chosen;      // "program", "cand3", ...
  double speedup = 1;      // measured over the program (1 for the program, 0 if not measured)
  std::string device;      // what measured: "cpu", the GPU's name, or "" (ranked by the model)
  std::string verdict;     // of the chosen graph
  // The files optimize writes (write_optimize_results), but search/: name -> text.
  std::vector<std::pair<std::string, std::string>> files;
};

// The key text and key of a program under options (the key text is JSON).
std::string cache_key_text(const ir::KernelGraph& program, const OptimizeOptions& o);
std::string cache_key(const std::string& key_text);

// Whether `e` may answer a request for `program_text` with time budget `budget_s` (0: none):
// the same program text; its search was exhausted, or it ran under a budget at least as large;
// and, for a GPU target, it was measured on a GPU or this machine has none (a result the model
// alone ranked is not served where it could be measured). Empty if so, else why not.
std::string cache_serves(const CacheEntry& e, const std::string& program_text, double budget_s);

class ResultCache;
// Looks `program` up under options `o`: the entry when it serves this request (cache_serves);
// none on a miss, with `why` (if given) saying why when an entry existed but does not serve.
Result<std::optional<CacheEntry>> cache_lookup(const ResultCache& cache,
                                               const ir::KernelGraph& program,
                                               const OptimizeOptions& o, std::string* why);
// A stored file's text (e.g. "best.mu", "report.txt"), or null.
const std::string* cache_file(const CacheEntry& e, const std::string& name);

// The entry optimize's report makes (files as write_optimize_results writes them).
Result<CacheEntry> make_cache_entry(const OptimizeReport& r, const ir::KernelGraph& program,
                                    const OptimizeOptions& o, const std::string& name);

// The default file: <cache dir>/results.sqlite (see the top of this file).
std::string default_result_cache_path();

class ResultCache {
 public:
  // Opens (creating it and its directory if needed) the cache file. busy_timeout_ms: how long a
  // statement waits for another process's lock before it fails.
  static Result<ResultCache> open(const std::string& path, int busy_timeout_ms = 10000);
  ResultCache(ResultCache&& o) noexcept;
  ResultCache& operator=(ResultCache&& o) noexcept;
  ~ResultCache();

  const std::string& path() const { return path_; }
  // The entry under `key`, if any.
  Result<std::optional<CacheEntry>> find(const std::string& key) const;
  // Stores (or replaces) the entry under e.key.
  Status put(const CacheEntry& e);
  // Every entry (without files), newest first.
  Result<std::vector<CacheEntry>> list() const;
  // Removes the entries whose key starts with `prefix` (at least 4 digits); how many.
  Result<int> remove(const std::string& prefix);
  Status clear();

 private:
  ResultCache(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace mugraph::driver
