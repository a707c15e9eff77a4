// Parser fuzzing (issue 19): seeded random mutations of every example and test-data program, fed
// to the text parser and, in their JSON form, to the JSON loader. Each input must come back as a
// graph or as an error. Failures (exit 1): crashes (an exception escaping a parser, an empty error
// message; memory errors and undefined behaviour stop the run in a -DMUGRAPH_SANITIZE=ON build),
// and round-trip failures (a graph that parses but does not print and load back, as text and as
// JSON, to an equal graph; --ignore-round-trip reports them without failing). The first 10
// failing inputs of each kind are saved (in --save DIR, default .) for --replay. Every error
// must also say where it is: "LINE:COL: ..." with LINE:COL inside the input for text, a JSON path
// ("ops[2].nodes[0]: ...") or a line/column for JSON. Errors without one are counted, grouped
// and shown (a failure with --strict-positions).
//
// Mutations: those of tests/ir/fuzz_test.cc (deleted spans, inserted punctuation, swapped
// characters, numbers replaced by edge values) plus arbitrary bytes, keywords of the grammar,
// duplicated and spliced spans and truncation. Mutants that parse join a bounded pool that later
// mutants start from, so edits stack up. The same seed and seed files give the same run.
//
//   parse_fuzz [--inputs N] [--seed S] [--show K] [--save DIR] [--strict-positions]
//              [--ignore-round-trip] [FILE|DIR...]
//   parse_fuzz --replay FILE      (one saved failing input; JSON if FILE ends in .json)
//
// N inputs per parser (default 1,000,000); seeds default to every *.mu under examples/ and
// tests/data/. libFuzzer (clang) would add coverage guidance; this seeded main needs none.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/json.h"
#include "ir/memory.h"
#include "ir/text.h"
#include "support/rng.h"

namespace mugraph::ir {
namespace {

namespace fs = std::filesystem;

// Pool of mutants that parsed, besides the seeds: large enough to keep many stacked edits around,
// small enough that the seeds (picked half of the time) stay the main starting points.
constexpr size_t kPoolCap = 4096;
// Inputs grow by duplicated spans; past this they are cut (every seed is < 4 KiB).
constexpr size_t kMaxInput = 64 << 10;

// Words the grammar (text and JSON keys) gives meaning to: a mutation swaps an identifier for one.
const char* const kWords[] = {
    "input", "output", "graph_defined", "thread_graph", "input_iterator", "accumulator",
    "output_saver", "phi", "grid", "forloop", "imap", "fmap", "omap", "dim", "group", "times",
    "shape", "factor", "strides", "matmul", "sum", "exp", "mul", "div", "add", "neg", "sqrt",
    "repeat", "reshape", "concat", "rms_norm", "softmax", "attention", "f16", "bf16", "f32", "x",
    "y", "z", "nodes", "ops", "inputs", "outputs", "kind", "attrs", "format", "version", "op",
    "name", "dtype", "true", "null", "mugraph.ugraph"};

std::string mutate(std::string s, Rng& rng, const std::vector<std::string>& pool) {
  static const std::string kInsert = "(){}[],=:/#-0123456789 xyzphi\n\".e+\\";
  static const char* kNumbers[] = {"0", "-1", "1", "3", "7", "4294967297", "1099511627776",
                                   "9223372036854775807", "-9223372036854775808",
                                   "9223372036854775808", "1073741825", "-0", "1e999", "0.5"};
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng.below(s.size());
    switch (rng.below(9)) {
      case 0:  // delete a short span
        s.erase(at, 1 + rng.below(5));
        break;
      case 1:  // insert a character the grammar cares about
        s.insert(at, 1, kInsert[rng.below(kInsert.size())]);
        break;
      case 2:  // swap two characters
        std::swap(s[at], s[rng.below(s.size())]);
        break;
      case 3: {  // replace the next number by an edge value
        const size_t d = s.find_first_of("0123456789", at);
        if (d == std::string::npos) break;
        const size_t end = s.find_first_not_of("0123456789", d);
        s.replace(d, (end == std::string::npos ? s.size() : end) - d,
                  kNumbers[rng.below(std::size(kNumbers))]);
        break;
      }
      case 4:  // any byte: NUL, control characters, UTF-8 fragments
        s.insert(at, 1, static_cast<char>(rng.below(256)));
        break;
      case 5: {  // replace the next identifier by a word of the grammar
        static const char* kIdent = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
        const size_t b = s.find_first_of(kIdent, at);
        if (b == std::string::npos) break;
        size_t end = b;
        while (end < s.size() &&
               (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_'))
          ++end;
        s.replace(b, end - b, kWords[rng.below(std::size(kWords))]);
        break;
      }
      case 6: {  // duplicate a span elsewhere (repeated statements, nested brackets)
        const std::string span = s.substr(at, 1 + rng.below(64));
        s.insert(rng.below(s.size() + 1), span);
        break;
      }
      case 7: {  // splice in a span of another input
        const std::string& o = pool[rng.below(pool.size())];
        if (o.empty()) break;
        const size_t from = rng.below(o.size());
        s.replace(at, rng.below(32), o.substr(from, 1 + rng.below(64)));
        break;
      }
      default:  // truncate
        s.resize(at);
    }
  }
  if (s.size() > kMaxInput) s.resize(kMaxInput);
  return s;
}

// "LINE:COL: " at the start of `msg`, with LINE:COL a place in `input` (the end of input counts).
bool has_text_position(const std::string& msg, const std::string& input) {
  long line = 0, col = 0;
  int used = 0;
  if (std::sscanf(msg.c_str(), "%ld:%ld: %n", &line, &col, &used) != 2 || used == 0) return false;
  long n = 1, len = 0;  // line number and length of the line being scanned
  for (size_t i = 0; i <= input.size(); ++i) {
    if (i == input.size() || input[i] == '\n') {
      if (n == line) return col >= 1 && col <= len + 1;
      ++n, len = 0;
    } else {
      ++len;
    }
  }
  return false;
}

// A JSON error is placed by nlohmann's "line L, column C" / "byte B", or by a path before the
// first ": " after "JSON: " ("ops[2].nodes[0]", "inputs[1].shape", "version").
bool has_json_position(const std::string& msg) {
  if (msg.find("line ") != std::string::npos && msg.find(", column ") != std::string::npos)
    return true;
  if (msg.find(" byte ") != std::string::npos) return true;
  const std::string prefix = "JSON: ";
  if (msg.rfind(prefix, 0) != 0) return false;
  const size_t colon = msg.find(": ", prefix.size());
  if (colon == std::string::npos || colon == prefix.size()) return false;
  for (size_t i = prefix.size(); i < colon; ++i) {
    const char c = msg[i];
    const bool path_char = std::isalnum(static_cast<unsigned char>(c)) ||
                           std::string_view("_.[]/").find(c) != std::string_view::npos;
    if (!path_char) return false;
  }
  return true;
}

// Groups messages that differ only in numbers and quoted names.
std::string message_shape(const std::string& msg) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < msg.size(); ++i) {
    const char c = msg[i];
    if (c == '\'') {
      quoted = !quoted;
      out += quoted ? "'...'" : "";
    } else if (quoted) {
      continue;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      if (out.empty() || out.back() != 'N') out += 'N';
    } else {
      out += c;
    }
  }
  return out.size() > 160 ? out.substr(0, 160) + "..." : out;
}

enum class Format { kText, kJson };

struct Outcome {
  std::string crash;       // non-empty: an exception or an empty error message
  std::string round_trip;  // non-empty: how the parsed graph fails to round-trip
  std::string error;    // the parser's error message, when it rejected the input
  bool parsed = false;
};

// What every graph that parses must satisfy: both forms print and load back to an equal graph.
std::string round_trip_failure(const KernelGraph& g) {
  const std::string text = print_graph(g);
  auto again = parse_graph(text);
  if (!again.ok()) return "printed text does not parse: " + again.status().message();
  if (!(*again == g)) return "parse(print(g)) != g";
  auto back = from_json(to_json(g));
  if (!back.ok()) return "to_json output does not load: " + back.status().message();
  if (!(*back == g)) return "from_json(to_json(g)) != g";
  (void)check_memory(g, MemoryLimits{int64_t{1} << 40, 1 << 20, 255});
  return "";
}

Outcome run_one(Format f, const std::string& input) {
  Outcome o;
  try {
    Result<KernelGraph> g = f == Format::kText ? parse_graph(input) : from_json(input);
    if (!g.ok()) {
      o.error = g.status().message();
      if (o.error.empty()) o.crash = "empty error message";
      return o;
    }
    o.parsed = true;
    o.round_trip = round_trip_failure(*g);
  } catch (const std::exception& e) {
    o.crash = std::string("exception: ") + e.what();
  } catch (...) {
    o.crash = "unknown exception";
  }
  return o;
}

#ifndef MUGRAPH_LIBFUZZER  // the seeded main; libFuzzer brings its own driver
struct Report {
  long inputs = 0, parsed = 0, rejected = 0, crashes = 0, round_trips = 0, unplaced = 0;
  double seconds = 0, slowest = 0;
  std::map<std::string, long> unplaced_shapes;  // message shape -> count
  std::map<std::string, std::string> unplaced_example;
};

// Runs `n` mutants of `seeds` through one parser.
Report fuzz(Format f, const std::vector<std::string>& seeds, long n, uint64_t seed,
            const fs::path& save) {
  Rng rng(seed);
  Report r;
  std::vector<std::string> pool = seeds;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    const bool from_seed = rng.below(2) == 0;
    const std::string& parent =
        from_seed ? seeds[rng.below(seeds.size())] : pool[rng.below(pool.size())];
    const std::string input = mutate(parent, rng, pool);
    const auto t0 = std::chrono::steady_clock::now();
    const Outcome o = run_one(f, input);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    r.slowest = std::max(r.slowest, took.count());
    ++r.inputs;
    if (!o.crash.empty() || !o.round_trip.empty()) {
      const bool crash = !o.crash.empty();
      const long k = crash ? ++r.crashes : ++r.round_trips;
      if (k > 10) continue;  // the run is deterministic: rerun to get the others
      const std::string name = std::string("parse_fuzz_") + (crash ? "crash_" : "roundtrip_") +
                               std::to_string(k) + (f == Format::kText ? ".mu" : ".json");
      const std::string path = (save / name).string();
      std::ofstream(path, std::ios::binary) << input;
      std::printf("%s (input %ld, saved to %s): %s\n", crash ? "CRASH" : "ROUND TRIP", i,
                  path.c_str(), (crash ? o.crash : o.round_trip).c_str());
      continue;
    }
    if (o.parsed) {
      ++r.parsed;
      if (input != parent) {
        if (pool.size() < seeds.size() + kPoolCap) pool.push_back(input);
        else pool[seeds.size() + rng.below(kPoolCap)] = input;
      }
      continue;
    }
    ++r.rejected;
    const bool placed =
        f == Format::kText ? has_text_position(o.error, input) : has_json_position(o.error);
    if (!placed) {
      ++r.unplaced;
      const std::string shape = message_shape(o.error);
      if (r.unplaced_shapes[shape]++ == 0) r.unplaced_example[shape] = o.error;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void print_report(const char* what, const Report& r, int show) {
  std::printf("%-5s inputs %ld  parsed %ld  rejected %ld  crashes %ld  round-trip failures %ld  "
              "errors without position %ld  (%.1f s, %.0f inputs/s, slowest input %.1f ms)\n",
              what, r.inputs, r.parsed, r.rejected, r.crashes, r.round_trips, r.unplaced, r.seconds,
              static_cast<double>(r.inputs) / std::max(r.seconds, 1e-9), r.slowest * 1e3);
  std::vector<std::pair<long, std::string>> by_count;
  for (const auto& [shape, count] : r.unplaced_shapes) by_count.emplace_back(count, shape);
  std::sort(by_count.rbegin(), by_count.rend());
  if (!by_count.empty())
    std::printf("  %zu kinds of error without a position; the %d most frequent:\n", by_count.size(),
                std::min<int>(show, static_cast<int>(by_count.size())));
  for (int k = 0; k < show && k < static_cast<int>(by_count.size()); ++k) {
    std::string ex = r.unplaced_example.at(by_count[static_cast<size_t>(k)].second);
    if (ex.size() > 200) ex = ex.substr(0, 200) + "...";
    std::printf("  %8ld  %s\n", by_count[static_cast<size_t>(k)].first, ex.c_str());
  }
}

// --replay FILE: one input (JSON if it ends in .json), with the printed forms when a round trip
// fails, to see what differs.
int replay(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const Outcome o = run_one(is_json ? Format::kJson : Format::kText, ss.str());
  if (!o.crash.empty()) {
    std::printf("CRASH: %s\n", o.crash.c_str());
    return 1;
  }
  if (!o.parsed) {
    std::printf("rejected: %s\n", o.error.c_str());
    return 0;
  }
  if (o.round_trip.empty()) {
    std::printf("parsed and round-trips\n");
    return 0;
  }
  std::printf("ROUND TRIP: %s\n", o.round_trip.c_str());
  auto g = is_json ? from_json(ss.str()) : parse_graph(ss.str());
  std::printf("--- print_graph(g):\n%s", print_graph(*g).c_str());
  if (auto again = parse_graph(print_graph(*g)); again.ok())
    std::printf("--- print_graph(parse(print_graph(g))):\n%s", print_graph(*again).c_str());
  std::printf("--- to_json(g):\n%s\n", to_json(*g, -1).c_str());
  return 1;
}

std::vector<std::string> seed_files(const std::vector<std::string>& roots) {
  std::vector<std::string> files;
  for (const std::string& root : roots) {
    if (!fs::is_directory(root)) {
      files.push_back(root);
      continue;
    }
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().extension() == ".mu") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

int main_impl(int argc, char** argv) {
  long n = 1000000;
  uint64_t seed = 19;
  int show = 12;
  bool strict = false, ignore_round_trip = false;
  fs::path save = ".";
  std::vector<std::string> roots;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--inputs" && i + 1 < argc) n = std::atol(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--show" && i + 1 < argc) show = std::atoi(argv[++i]);
    else if (a == "--save" && i + 1 < argc) save = argv[++i];
    else if (a == "--strict-positions") strict = true;
    else if (a == "--ignore-round-trip") ignore_round_trip = true;
    else if (a == "--replay" && i + 1 < argc) return replay(argv[++i]);
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: parse_fuzz [--inputs N] [--seed S] [--show K] [--save DIR] "
                           "[--strict-positions] [--ignore-round-trip] [FILE|DIR...] | "
                           "--replay FILE\n");
      return 2;
    } else roots.push_back(a);
  }
  if (roots.empty()) roots = {MUGRAPH_EXAMPLES_DIR, MUGRAPH_TEST_DATA_DIR};
  std::vector<std::string> texts, jsons;
  for (const std::string& path : seed_files(roots)) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
    // Seeds that are valid programs also seed the JSON loader (compact, as in the test fuzzer).
    if (auto g = parse_graph(texts.back()); g.ok()) jsons.push_back(to_json(*g, -1));
  }
  if (texts.empty() || jsons.empty()) {
    std::fprintf(stderr, "parse_fuzz: no seed programs found\n");
    return 2;
  }
  std::printf("parse_fuzz: %zu seed files (%zu valid programs), %ld inputs per parser, seed %llu\n",
              texts.size(), jsons.size(), n, static_cast<unsigned long long>(seed));
  std::error_code ec;
  fs::create_directories(save, ec);
  const Report text = fuzz(Format::kText, texts, n, seed, save);
  print_report("text", text, show);
  const Report json = fuzz(Format::kJson, jsons, n, seed + 1, save);
  print_report("json", json, show);
  const long crashes = text.crashes + json.crashes;
  const long round_trips = text.round_trips + json.round_trips;
  const long unplaced = text.unplaced + json.unplaced;
  const bool fail =
      crashes > 0 || (!ignore_round_trip && round_trips > 0) || (strict && unplaced > 0);
  std::printf("%s: %ld crashes, %ld round-trip failures, %ld errors without a position\n",
              fail ? "FAIL" : "OK", crashes, round_trips, unplaced);
  return fail ? 1 : 0;
}
#endif

}  // namespace
}  // namespace mugraph::ir

#ifdef MUGRAPH_LIBFUZZER
// libFuzzer entry (clang -fsanitize=fuzzer -DMUGRAPH_LIBFUZZER, bench/results/parse_fuzz.md):
// every input goes to both parsers; a crash aborts so that libFuzzer keeps the input. Round-trip
// failures abort too unless MUGRAPH_FUZZ_IGNORE_ROUND_TRIP is defined (while known ones are open).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mugraph::ir;
  const std::string input(reinterpret_cast<const char*>(data), size);
  for (Format f : {Format::kText, Format::kJson}) {
    const Outcome o = run_one(f, input);
    std::string what = o.crash;
#ifndef MUGRAPH_FUZZ_IGNORE_ROUND_TRIP
    if (what.empty()) what = o.round_trip;
#endif
    if (!what.empty()) {
      std::fprintf(stderr, "%s parser: %s\n", f == Format::kText ? "text" : "JSON", what.c_str());
      std::abort();
    }
  }
  return 0;
}
#else
int main(int argc, char** argv) { return mugraph::ir::main_impl(argc, argv); }
#endif
