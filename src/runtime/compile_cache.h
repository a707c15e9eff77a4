// Compiling generated source into a cached shared object, for both JITs (cpu_jit, cuda_jit).
//
// Cache: <cache_dir>/<key>.so where key = FNV-1a of (source, headers, compiler version line,
// flags); a second compile of the same source is a file lookup. The headers the source includes
// are written under <cache_dir>/include-<hash of the headers>/. Objects are written under a
// temporary name and renamed, so concurrent processes never load a half-written file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "support/status.h"

namespace mugraph::runtime {

struct CompileRequest {
  std::string what;            // "CPU" / "CUDA": named in errors
  std::string compiler;        // the command
  std::string install_hint;    // said when the compiler is missing
  std::vector<std::string> flags;       // before the source
  std::vector<std::string> link_flags;  // after the output
  std::vector<std::pair<std::string, std::string>> headers;  // file name, text
  std::string source;
  std::string extension;  // of the source file: ".cc", ".cu"
  std::string cache_dir;
  double time_limit_s = 0;  // > 0: the compiler is stopped after this long (an error says so)
};

struct Compiled {
  std::string path;  // the shared object
  bool from_cache = false;
  double seconds = 0;  // compile time (0 when cached)
};

// Errors: no cache directory, a missing compiler (with the hint), a failed compile (with the
// tail of the compiler's output and the source's path), an unwritable cache.
Result<Compiled> compile_cached(const CompileRequest& r);

}  // namespace mugraph::runtime
