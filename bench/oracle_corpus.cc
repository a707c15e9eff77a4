// The whole oracle corpus (expr/oracle_corpus.h): every query met while walking the prefixes
// of RMSNorm+MatMul, LoRA, GatedMLP and GQA, answered by the e-graph and checked against Z3.
//   build/bench/oracle_corpus [--stride N] [--threads N] [--z3-timeout-ms MS] [--examples DIR]
#include <cstdio>
#include <cstring>
#include <string>

#include "driver/driver.h"
#include "expr/oracle_corpus.h"

using namespace mugraph;

int main(int argc, char** argv) {
  expr::CorpusOptions o;
  std::string dir = MUGRAPH_EXAMPLES_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--stride")) o.stride = static_cast<size_t>(std::max(1, std::atoi(argv[i + 1])));
    if (!std::strcmp(argv[i], "--threads")) o.threads = static_cast<unsigned>(std::max(1, std::atoi(argv[i + 1])));
    if (!std::strcmp(argv[i], "--z3-timeout-ms")) o.z3_timeout_ms = static_cast<unsigned>(std::max(1, std::atoi(argv[i + 1])));
    if (!std::strcmp(argv[i], "--examples")) dir = argv[i + 1];
  }
  std::vector<expr::CorpusProgram> programs;
  for (const char* name : {"rms_norm_matmul", "lora", "gated_mlp", "gqa"}) {
    auto g = driver::load_graph_file(dir + "/" + name + ".mu");
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", g.status().message().c_str());
      return 1;
    }
    programs.push_back({name, *g, expr::corpus_walk_options(name)});
  }
  const expr::CorpusReport r = expr::check_oracle_corpus(programs, o);
  std::printf("%s\n", r.to_string().c_str());
  return r.disagreements == 0 ? 0 : 3;
}
