// The CLI's side of the result cache (driver/result_cache.h): `optimize`'s look-up and store,
// and `mugraph cache ls|show|rm|clear`.
#pragma once

#include <optional>
#include <string>

#include "driver/optimize.h"
#include "driver/result_cache.h"

namespace mugraph::tools {

// Whether the cache is off: --no-cache, or MUGRAPH_NO_CACHE set to anything but "" or "0".
bool cache_disabled(bool no_cache_flag);

// Opens the default cache; on failure warns on stderr (the search goes on without the cache).
std::optional<driver::ResultCache> open_cache_or_warn();

// Looks `program` up. A hit prints the stored report (or writes it under out_dir) and returns
// 0 (or 1 when writing out_dir failed: an error, no search); a miss says why when there was an
// entry and returns -1. Cache errors warn and miss. started: when the command began (for the
// "in N ms" of a hit).
int serve_from_cache(const driver::ResultCache& cache, const ir::KernelGraph& program,
                      const driver::OptimizeOptions& o, const std::string& out_dir,
                      double started_s);

// Stores what optimize handed out (a cut or cancelled run is not stored: says why on stderr).
void store_in_cache(driver::ResultCache& cache, const driver::OptimizeReport& r,
                    const ir::KernelGraph& program, const driver::OptimizeOptions& o,
                    const std::string& name);

// `mugraph cache ACTION [KEY]`: exit code.
int cmd_cache(const std::string& action, const std::string& key);

// Seconds on a steady clock.
double now_s();

}  // namespace mugraph::tools
