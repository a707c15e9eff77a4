#include "result_cache_cli.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "ir/text.h"

namespace mugraph::tools {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool cache_disabled(bool no_cache_flag) {
  const char* e = std::getenv("MUGRAPH_NO_CACHE");
  return no_cache_flag || (e != nullptr && *e != '\0' && std::string(e) != "0");
}

std::optional<driver::ResultCache> open_cache_or_warn() {
  auto c = driver::ResultCache::open(driver::default_result_cache_path());
  if (c.ok()) return std::move(c).value();
  std::cerr << "warning: " << c.status().message() << "; searching without the cache\n";
  return std::nullopt;
}

namespace {

std::string date_text(double epoch_s) {
  const std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, "%Y-%m-%d %H:%M UTC");
  return s.str();
}

}  // namespace

int serve_from_cache(const driver::ResultCache& cache, const ir::KernelGraph& program,
                      const driver::OptimizeOptions& o, const std::string& out_dir,
                      double started_s) {
  std::string why;
  auto hit = driver::cache_lookup(cache, program, o, &why);
  if (!hit.ok()) {
    std::cerr << "warning: " << hit.status().message() << "; searching without the cache\n";
    return -1;
  }
  if (!hit->has_value()) {
    if (!why.empty()) std::cerr << "note: result cache: " << why << "; searching again\n";
    return -1;
  }
  const driver::CacheEntry& e = **hit;
  std::cout << *driver::cache_file(e, "report.txt");
  if (!out_dir.empty()) {
    if (Status s = driver::write_files(e.files, out_dir); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return 1;
    }
    std::cout << "written to " << out_dir << " (no search/: the search did not run)\n";
  } else {
    std::cout << "\n" << *driver::cache_file(e, "best.mu");
  }
  std::cout << "from the result cache in " << std::fixed << std::setprecision(0)
            << (now_s() - started_s) * 1e3 << " ms: key " << e.key.substr(0, 12) << ", stored "
            << date_text(e.created) << " by mugraph " << e.version << " (" << cache.path()
            << "; --no-cache searches again, `mugraph cache rm " << e.key.substr(0, 12)
            << "` forgets it)\n";
  return 0;
}

void store_in_cache(driver::ResultCache& cache, const driver::OptimizeReport& r,
                    const ir::KernelGraph& program, const driver::OptimizeOptions& o,
                    const std::string& name) {
  auto e = driver::make_cache_entry(r, program, o, name);
  if (!e.ok()) {
    std::cerr << "note: result cache: " << e.status().message() << "\n";
    return;
  }
  if (Status s = cache.put(*e); !s.ok())
    std::cerr << "warning: " << s.message() << "; the result is not cached\n";
}

int cmd_cache(const std::string& action, const std::string& key) {
  auto opened = driver::ResultCache::open(driver::default_result_cache_path());
  if (!opened.ok()) {
    std::cerr << "error: " << opened.status().message() << "\n";
    return 1;
  }
  driver::ResultCache cache = std::move(opened).value();
  driver::ResultCache* c = &cache;
  if (action == "clear") {
    if (Status s = c->clear(); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return 1;
    }
    std::cout << "cleared " << c->path() << "\n";
    return 0;
  }
  if (action == "rm") {
    auto n = c->remove(key);
    if (!n.ok()) {
      std::cerr << "error: " << n.status().message() << "\n";
      return 1;
    }
    if (*n == 0) {
      std::cerr << "error: no entry with key " << key << " in " << c->path() << "\n";
      return 1;
    }
    std::cout << "removed " << *n << " entr" << (*n == 1 ? "y" : "ies") << "\n";
    return 0;
  }
  auto all = c->list();
  if (!all.ok()) {
    std::cerr << "error: " << all.status().message() << "\n";
    return 1;
  }
  if (action == "ls") {
    std::cout << c->path() << ": " << all->size() << " entr" << (all->size() == 1 ? "y" : "ies")
              << "\n";
    if (all->empty()) return 0;
    std::printf("%-12s  %-20s  %-6s  %-24s  %-9s  %7s  %-18s  %s\n", "key", "stored", "target",
                "program", "chosen", "speedup", "verdict", "search");
    // speedup: measured over the program; "model" where nothing measured (a GPU target
    // optimized on a machine without a GPU).
    for (const driver::CacheEntry& e : *all) {
      const std::string search =
          e.exhausted ? "exhausted"
                      : "cut at " + std::to_string(static_cast<int>(e.budget_s)) + " s budget";
      char speedup[32];
      if (e.device.empty())
        std::snprintf(speedup, sizeof speedup, "model");
      else
        std::snprintf(speedup, sizeof speedup, "%.2fx", e.speedup);
      std::printf("%-12s  %-20s  %-6s  %-24s  %-9s  %7s  %-18s  %s\n",
                  e.key.substr(0, 12).c_str(), date_text(e.created).c_str(), e.target.c_str(),
                  e.name.c_str(), e.chosen.c_str(), speedup, e.verdict.c_str(), search.c_str());
    }
    return 0;
  }
  // show
  std::vector<const driver::CacheEntry*> match;
  for (const driver::CacheEntry& e : *all)
    if (!key.empty() && e.key.rfind(key, 0) == 0) match.push_back(&e);
  if (match.size() != 1) {
    std::cerr << "error: " << (match.empty() ? "no entry" : "several entries") << " with key '"
              << key << "' in " << c->path() << " (`mugraph cache ls` lists them)\n";
    return 1;
  }
  auto full = c->find(match[0]->key);
  if (!full.ok() || !full->has_value()) {
    std::cerr << "error: " << (full.ok() ? "entry vanished" : full.status().message()) << "\n";
    return 1;
  }
  const driver::CacheEntry& e = **full;
  std::cout << "key " << e.key << "\nstored " << date_text(e.created) << " by mugraph "
            << e.version << "\nkey text " << e.key_text << "\n\n== program (" << e.name
            << ")\n" << e.program;
  for (const auto& [name, text] : e.files)
    if (name == "report.txt" || name == "best.mu") std::cout << "\n== " << name << "\n" << text;
  return 0;
}

}  // namespace mugraph::tools
