// Structural checks of generated CUDA text (codegen/cuda), without a GPU. They read the source
// the way a reviewer does, following the shapes generate_cuda.cc prints:
//
//   check_cp_async_reads   every read of a cp.async destination (a shared tile filled by
//                          mg::copy_rows_async) comes after a cp_async_wait that covers its
//                          group AND a __syncthreads() after that wait: the wait completes
//                          only the calling thread's copies, the barrier publishes the others'.
//                          The kernel body is walked with the for-loop unrolled over every
//                          iteration `it` (and `if (it + 1 < R)` decided), tracking per tile
//                          (double buffers per half) in flight / landed / visible.
//   check_wmma_alignment   every mg::matmul_tile call, at the shared-memory offsets of its tile
//                          declarations (dynamic shared memory 128-byte aligned), gets a WMMA
//                          fragment plan (runtime/device/mg_fragment.cuh) whose fragments all
//                          start 32-byte aligned.
// Each returns one line per problem, naming the kernel, the source line and the tile.
#pragma once

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/device/mg_fragment.cuh"

namespace mugraph::testing {

struct CudaKernelText {
  std::string name;
  std::vector<std::string> lines;  // the body, without the signature and the closing brace
};

// The __global__ kernels of a module.
inline std::vector<CudaKernelText> cuda_kernels(const std::string& source) {
  std::vector<CudaKernelText> v;
  std::istringstream in(source);
  std::string line;
  bool inside = false;
  static const std::regex sig(R"(__global__ void(?: __launch_bounds__\(\d+\))? (\w+)\()");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!inside && std::regex_search(line, m, sig)) {
      v.push_back({m[1], {}});
      inside = true;
    } else if (inside && line == "}") {
      inside = false;
    } else if (inside) {
      v.back().lines.push_back(line);
    }
  }
  return v;
}

// A kernel's shared tiles: name -> byte offset in dynamic shared memory and element bytes;
// double-buffer views (`s_k = s_k_buf + (it & 1) * N`) -> their buffer and half size.
struct SharedTiles {
  struct Tile {
    long long offset = 0;
    int bytes = 0;
  };
  std::map<std::string, Tile> tiles;
  struct View {
    std::string buffer;
    long long half = 0;  // elements
  };
  std::map<std::string, View> views;
};

inline int storage_bytes(const std::string& type) {
  return type == "float" ? 4 : 2;  // float, mg::f16, mg::bf16
}

inline SharedTiles shared_tiles(const CudaKernelText& k) {
  SharedTiles s;
  static const std::regex decl(R"(^\s*(\S+)\* const (\w+) = reinterpret_cast<\S+>\(smem \+ (\d+)\);)");
  static const std::regex view(R"(^\s*\S+\* const (\w+) = (\w+) \+ \(it & 1\) \* (\d+);)");
  for (const std::string& l : k.lines) {
    std::smatch m;
    if (std::regex_search(l, m, decl))
      s.tiles[m[2]] = {std::stoll(m[3]), storage_bytes(m[1])};
    else if (std::regex_search(l, m, view))
      s.views[m[1]] = {m[2], std::stoll(m[3])};
  }
  return s;
}

inline std::vector<std::string> identifiers(const std::string& line) {
  std::vector<std::string> v;
  static const std::regex id(R"([A-Za-z_]\w*)");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), id); it != std::sregex_iterator();
       ++it)
    v.push_back(it->str());
  return v;
}

inline int brace_balance(const std::string& line) {
  int b = 0;
  for (char c : line) b += c == '{' ? 1 : c == '}' ? -1 : 0;
  return b;
}

// Index of the line closing the block opened at `open`.
inline size_t block_end(const std::vector<std::string>& lines, size_t open) {
  int depth = 0;
  for (size_t i = open; i < lines.size(); ++i) {
    depth += brace_balance(lines[i]);
    if (depth == 0) return i;
  }
  return lines.size();
}

class CpAsyncWalk {
 public:
  CpAsyncWalk(const CudaKernelText& k, std::vector<std::string>& problems)
      : k_(k), tiles_(shared_tiles(k)), problems_(problems) {}

  void run() { walk(0, k_.lines.size(), -1); }

 private:
  enum class State { kInFlight, kLanded };
  struct Copy {
    State state = State::kInFlight;
    int group = -1;  // -1: not committed yet
  };
  using Key = std::pair<std::string, long long>;  // buffer, half (0 or 1)

  // The tile a name refers to at iteration `it`, if it is one.
  bool resolve(const std::string& name, long long it, Key& key) const {
    if (auto v = tiles_.views.find(name); v != tiles_.views.end()) {
      key = {v->second.buffer, it & 1};
      return true;
    }
    if (tiles_.tiles.count(name)) {
      key = {name, 0};
      return true;
    }
    return false;
  }

  // The destination of `mg::copy_rows_async(DST, ...)`: a tile, a view, or a buffer half.
  Key destination(const std::string& line, long long it) const {
    static const std::regex half(R"(copy_rows_async\(\((\w+) \+ \(\(it \+ 1\) & 1\) \* \d+\))");
    static const std::regex plain(R"(copy_rows_async\((\w+),)");
    std::smatch m;
    if (std::regex_search(line, m, half)) return {m[1], (it + 1) & 1};
    Key key;
    if (std::regex_search(line, m, plain) && resolve(m[1], it, key)) return key;
    problems_.push_back(k_.name + ": cannot read the destination of: " + line);
    return {"?", 0};
  }

  void step(const std::string& line, long long it) {
    const std::string t = line.substr(line.find_first_not_of(' ') == std::string::npos
                                          ? line.size()
                                          : line.find_first_not_of(' '));
    if (t.rfind("//", 0) == 0 || t.find("* const ") != std::string::npos) return;
    if (t.find("mg::copy_rows_async(") != std::string::npos) {
      in_flight_[destination(t, it)] = Copy{};
      return;
    }
    if (t == "mg::cp_async_commit();") {
      ++groups_;
      for (auto& [key, c] : in_flight_)
        if (c.group < 0) c.group = groups_;
      return;
    }
    static const std::regex wait(R"(^mg::cp_async_wait<(\d+)>\(\);)");
    std::smatch m;
    if (std::regex_search(t, m, wait)) {
      const int pending = std::stoi(m[1]);
      for (auto& [key, c] : in_flight_)
        if (c.group >= 0 && c.group <= groups_ - pending) c.state = State::kLanded;
      return;
    }
    if (t == "__syncthreads();") {
      for (auto i = in_flight_.begin(); i != in_flight_.end();)
        i = i->second.state == State::kLanded ? in_flight_.erase(i) : std::next(i);
      return;
    }
    for (const std::string& id : identifiers(t)) {
      Key key;
      if (!resolve(id, it, key)) continue;
      auto c = in_flight_.find(key);
      if (c == in_flight_.end()) continue;
      problems_.push_back(
          k_.name + (it >= 0 ? " (it = " + std::to_string(it) + ")" : "") + ": reads " + id +
          (c->second.state == State::kInFlight ? " while its cp.async copy is in flight"
                                               : " after cp_async_wait but before __syncthreads()") +
          ": " + t);
      in_flight_.erase(c);  // one report per copy
    }
  }

  void walk(size_t begin, size_t end, long long it) {
    static const std::regex loop(R"(^\s*for \(int it = 0; it < (\d+); \+\+it\) \{$)");
    static const std::regex next(R"(^\s*if \(it \+ 1 < (\d+)\) \{$)");
    for (size_t i = begin; i < end; ++i) {
      const std::string& l = k_.lines[i];
      std::smatch m;
      if (std::regex_search(l, m, loop)) {
        const size_t close = block_end(k_.lines, i);
        for (long long r = 0; r < std::stoll(m[1]); ++r) walk(i + 1, close, r);
        i = close;
      } else if (std::regex_search(l, m, next)) {
        const size_t close = block_end(k_.lines, i);
        if (it + 1 < std::stoll(m[1])) walk(i + 1, close, it);
        i = close;
      } else {
        step(l, it);
      }
    }
  }

  const CudaKernelText& k_;
  SharedTiles tiles_;
  std::vector<std::string>& problems_;
  std::map<Key, Copy> in_flight_;
  int groups_ = 0;
};

inline std::vector<std::string> check_cp_async_reads(const std::string& source) {
  std::vector<std::string> problems;
  for (const CudaKernelText& k : cuda_kernels(source)) CpAsyncWalk(k, problems).run();
  return problems;
}

// ---- WMMA fragment alignment -------------------------------------------------------------------

// One operand of a matmul_tile call: mg::Mat<T>{NAME + OFFSET, s0, s1}, OFFSET a sum of
// constants and `bK * C` terms (batch loops).
struct MatArg {
  std::string type, name, offset;
  int s0 = 0, s1 = 0;
};

// The operand's byte addresses for batch indices 0 and 1 (every bK at once) and, for a double
// buffer view, both halves: the plan must hold at all of them.
inline std::vector<unsigned long long> addresses(const SharedTiles& s, const MatArg& a) {
  std::string buffer = a.name;
  std::vector<long long> halves{0};
  if (auto v = s.views.find(a.name); v != s.views.end()) {
    buffer = v->second.buffer;
    halves = {0, v->second.half};
  }
  const auto t = s.tiles.find(buffer);
  if (t == s.tiles.end()) return {};
  std::vector<unsigned long long> v;
  for (long long b : {0, 1})
    for (long long h : halves) {
      long long elems = h;
      static const std::regex term(R"((?:(b\d+) \* )?(\d+)|(b\d+))");
      for (auto it = std::sregex_iterator(a.offset.begin(), a.offset.end(), term);
           it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        if (m[3].matched) elems += b;
        else elems += (m[1].matched ? b : 1) * std::stoll(m[2]);
      }
      v.push_back(static_cast<unsigned long long>(t->second.offset + elems * t->second.bytes));
    }
  return v;
}

inline std::vector<std::string> check_wmma_alignment(const std::string& source) {
  std::vector<std::string> problems;
  static const std::regex call(
      R"(mg::matmul_tile(?:<\d+>)?\((\d+), (\d+), (\d+), mg::Mat<const ([^>]+)>\{(\w+) \+ ([^,]+), (\d+), (\d+)\}, mg::Mat<const ([^>]+)>\{(\w+) \+ ([^,]+), (\d+), (\d+)\}, mg::Mat<float>\{(\w+) \+ ([^,]+), (\d+), (\d+)\})");
  for (const CudaKernelText& k : cuda_kernels(source)) {
    const SharedTiles tiles = shared_tiles(k);
    for (const std::string& l : k.lines) {
      std::smatch m;
      if (!std::regex_search(l, m, call)) continue;
      const int mm = std::stoi(m[1]), n = std::stoi(m[2]), kk = std::stoi(m[3]);
      const MatArg a{m[4], m[5], m[6], std::stoi(m[7]), std::stoi(m[8])};
      const MatArg b{m[9], m[10], m[11], std::stoi(m[12]), std::stoi(m[13])};
      const MatArg c{"float", m[14], m[15], std::stoi(m[16]), std::stoi(m[17])};
      const bool tc = a.type == b.type && a.type != "float";
      for (unsigned long long pa : addresses(tiles, a))
        for (unsigned long long pb : addresses(tiles, b))
          for (unsigned long long pc : addresses(tiles, c)) {
            const mg::WmmaPlan p =
                mg::plan_wmma(tc, mm, n, kk, a.s0, a.s1, b.s0, b.s1, c.s0, c.s1, pa, pb, pc);
            if (p.fm == 0) continue;
            auto bad = [&](unsigned long long base, mg::Layout lay, int rows, int cols, int fr,
                           int fc, int bytes) {
              for (int i = 0; i < rows; i += fr)
                for (int j = 0; j < cols; j += fc)
                  if ((base + static_cast<unsigned long long>(mg::fragment_offset(lay, i, j)) *
                                  bytes) % 32 != 0)
                    return true;
              return false;
            };
            if (bad(pa, p.a, mm, kk, p.fm, 16, 2) || bad(pb, p.b, kk, n, 16, p.fn, 2) ||
                bad(pc, p.c, mm, n, p.fm, p.fn, 4))
              problems.push_back(k.name + ": a " + std::to_string(p.fm) + "x" +
                                 std::to_string(p.fn) + " WMMA fragment not 32-byte aligned: " +
                                 l.substr(l.find_first_not_of(' ')));
          }
    }
  }
  return problems;
}

}  // namespace mugraph::testing
