// Every example's uGraph (tests/data/host_cuda: examples/ at reduced shapes, the same block tiles)
// and every discovery candidate that the CUDA compile tests build, generated as CUDA, run in the
// host harness (runtime/host_cuda) and compared with the float64 interpreter; the race and
// barrier checker must find nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "codegen/candidates.h"
#include "driver/cuda_backend.h"
#include "driver/host_cuda_check.h"
#include "test_util.h"
#include "verify/small_programs.h"

namespace mugraph {
namespace {

ir::KernelGraph reduced_example(const std::string& name) {
  auto g =
      driver::load_graph_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/host_cuda/" + name + ".mu");
  if (!g.ok())
    throw std::runtime_error(g.status().message());
  return std::move(g).value();
}

// Generates, compiles and runs `graphs` (one module), checking each against the interpreter;
// the harness's runs.
std::vector<runtime::HostCudaRun> run_graphs(const std::vector<ir::KernelGraph>& graphs,
                                             const std::vector<std::string>& names,
                                             const target::Target& t) {
  std::vector<codegen::NamedGraph> named;
  for (size_t i = 0; i < graphs.size(); ++i)
    named.push_back({names[i], &graphs[i]});
  std::vector<runtime::HostCudaRun> runs;
  // MUGRAPH_KEEP_HOST_CUDA=1 keeps the generated source and harness for a failure's lines.
  runtime::HostCudaOptions o;
  o.keep_files = std::getenv("MUGRAPH_KEEP_HOST_CUDA") != nullptr;
  auto mod = driver::compile_host_cuda(named, t, o);
  EXPECT_TRUE(mod.ok()) << mod.status().message();
  if (!mod.ok())
    return runs;
  std::printf("%zu graphs, host compile %.1f s\n", graphs.size(), (*mod)->compile_seconds());
  for (size_t i = 0; i < graphs.size(); ++i) {
    auto c = driver::check_host_cuda(**mod, i, graphs[i], 1);
    EXPECT_TRUE(c.ok()) << names[i] << ": " << c.status().message();
    if (!c.ok())
      continue;
    EXPECT_TRUE(c->ok()) << names[i] << " (" << t.name << "):\n"
                         << c->summary() << "source: " << (*mod)->source_path()
                         << " (kept with MUGRAPH_KEEP_HOST_CUDA=1)";
    runs.push_back(c->run);
  }
  return runs;
}

std::vector<runtime::HostCudaRun> run_example(const std::string& name,
                                              const target::Target& t = target::h100()) {
  return run_graphs({reduced_example(name)}, {name}, t);
}

TEST(HostCudaExamples, RmsNormMatmul) { run_example("rms_norm_matmul"); }
// The fused kernel takes the paths the harness exists for: cp.async double buffering and
// tensor-core (WMMA) tiles, on both architectures.
TEST(HostCudaExamples, RmsNormMatmulFused) {
  const auto runs = run_example("rms_norm_matmul.fused");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_GT(runs[0].wmma_mmas, 0);
  EXPECT_GT(runs[0].cp_async_copies, 0);
  EXPECT_EQ(runs[0].wmma_bank_conflicts, 0);  // padded fragment tiles (pad_rows)
  // The matmul's loop accumulator (macc, 16x32: 2 fragments) stays in registers
  // (mg::RegisterAccumulator) and is stored once per block after the loop: 2 blocks x 2
  // fragments (the tile form stores every iteration and loads from the second: 2 x 6).
  EXPECT_EQ(runs[0].wmma_accumulator_transfers, 2 * 2);
}
TEST(HostCudaExamples, RmsNormMatmulFusedOnA100) {
  const auto runs = run_example("rms_norm_matmul.fused", target::a100());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_GT(runs[0].wmma_mmas, 0);
}
TEST(HostCudaExamples, GatedMlp) { run_example("gated_mlp"); }
TEST(HostCudaExamples, GatedMlpFused) { run_example("gated_mlp.fused"); }
TEST(HostCudaExamples, Gqa) { run_example("gqa"); }
TEST(HostCudaExamples, GqaFlashAttention) { run_example("gqa.flash_attention"); }
TEST(HostCudaExamples, GqaFlashDecoding) { run_example("gqa.flash_decoding"); }
TEST(HostCudaExamples, GqaSplitKv) { run_example("gqa.split_kv"); }
TEST(HostCudaExamples, QkNormAttention) { run_example("qknorm_attention"); }
TEST(HostCudaExamples, Lora) { run_example("lora"); }
TEST(HostCudaExamples, LoraConcatMatmul) { run_example("lora.concat_matmul"); }
TEST(HostCudaExamples, NTrans) { run_example("ntrans"); }


TEST(HostCudaExamples, Transposes) {
  auto g = ir::parse_graph(testing::kTransposes);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(run_graphs({*g}, {"transposes"}, target::h100()).size(), 1u);
}

// A GEMM chain E = (A B) D in one block graph (MCFuser's tiling, reduced): the f16 product C is
// stored as f16 (its declared type) and read by the second matmul, both on tensor cores. The
// first matmul's f32 accumulator is rounded into an f16 fragment (mg_tile.cuh matmul_wmma);
// the run must match the float64 interpreter.
TEST(HostCudaExamples, GemmChainProductStaysF16OnTensorCores) {
  auto g = ir::parse_graph(R"(
input A : f16[64, 32]
input B : f16[32, 64]
input D : f16[64, 32]
E = graph_defined(A, B, D, grid=[1, 1, 1], forloop=2) {
  A_t = input_iterator(A, imap={}, fmap=phi)
  B_t = input_iterator(B, imap={}, fmap=1)
  D_t = input_iterator(D, imap={}, fmap=0)
  C = matmul(A_t, B_t)
  t4 = matmul(C, D_t)
  E = accumulator(t4, fmap=phi)
  output_saver(E, omap={})
}
output E
)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto src = driver::generate_cuda({codegen::NamedGraph{"chain", &*g}}, target::h100());
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_NE(src->source.find("mg::Mat<mg::f16>{s_C + 0"), std::string::npos)
      << "the product is not an f16 tile:\n" << src->source;
  EXPECT_NE(src->source.find("mg::Mat<const mg::f16>{s_C + 0"), std::string::npos);
  const auto runs = run_graphs({*g}, {"gemm_chain"}, target::h100());
  ASSERT_EQ(runs.size(), 1u);
  // Both products on tensor cores: 2 iterations x (8 fragments x 2 k steps, twice).
  EXPECT_EQ(runs[0].wmma_mmas, 2 * (8 * 2 + 8 * 2));
  // The fragment tiles' rows are padded (generate_cuda.cc pad_rows): 64-byte rows would put
  // every other row of an 8-row ldmatrix phase in the same banks (4-way conflicts).
  EXPECT_EQ(runs[0].wmma_bank_conflicts, 0);
  // Register blocking at the kernel's 128 threads (mg::matmul_tile<128>): both products (4x2
  // fragments of 16x16) in 1x2 groups, one per warp, 3 loads per k step (4 without blocking).
  EXPECT_NE(src->source.find("mg::matmul_tile<128>("), std::string::npos);
  EXPECT_EQ(runs[0].wmma_fragment_loads, 2 * (4 * 2 * 3 + 4 * 2 * 3));
  // Accumulator fragments through shared memory: the f16 product (8 fragments) every
  // iteration; E's sum (8 fragments, in registers across the loop) once, after it.
  EXPECT_EQ(runs[0].wmma_accumulator_transfers, 2 * 8 + 8);
  EXPECT_NE(src->source.find("mg::Mat<const mg::f16>{s_A_t + 0, 40, 1}"), std::string::npos)
      << src->source;
}

// Graph-defined kernels copy tiles in 16-byte chunks (cp.async) and store 16-byte chunks
// (mg::store_rows): the entry refuses a tensor that is not 16-byte aligned, before any launch,
// with cudaErrorMisalignedAddress (a wrapper entry shifts one pointer by 2 bytes; the harness
// would report the misaligned copies had a kernel run). The saver of this graph takes 16-byte
// stores, and the aligned call matches the interpreter.
TEST(HostCudaExamples, EntriesRefuseMisalignedTensors) {
  const ir::KernelGraph g = reduced_example("rms_norm_matmul.fused");
  auto src = driver::generate_cuda({codegen::NamedGraph{"rms", &g}}, target::h100());
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_NE(src->source.find("mg::store_rows(d_Y, s_y, 16, 32,"), std::string::npos) << src->source;
  EXPECT_EQ(run_graphs({g}, {"rms"}, target::h100()).size(), 1u);
  for (const bool input : {true, false}) {  // X shifted, or Y
    codegen::Module m = *src;
    m.source += std::string("extern \"C\" int mg_entry_shifted(void* const* in, void* const* out, ") +
                "void* ws, void* s) {\n" +
                (input ? "  void* p[3] = {in[0], in[1], in[2]};\n" : "  void* p[1] = {out[0]};\n") +
                "  p[0] = static_cast<char*>(p[0]) + 2;\n  return mg_entry_rms(" +
                (input ? "p, out" : "in, p") + ", ws, s);\n}\n";
    m.entries.push_back({"mg_entry_shifted", m.entries[0].workspace_bytes, 3, 1});
    auto mod = runtime::compile_host_cuda(m, {});
    ASSERT_TRUE(mod.ok()) << mod.status().message();
    driver::CpuBuffers b = driver::make_buffers(g, 1);
    auto r = (*mod)->run(1, g, b.inputs, b.outputs);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->entry_rc, 716) << (input ? "input" : "output");  // cudaErrorMisalignedAddress
    EXPECT_TRUE(r->findings.empty()) << r->report();
    EXPECT_EQ(r->barriers, 0);  // nothing launched
  }
}

// Every file of examples/ has its reduced copy here (and is run by a test above).
TEST(HostCudaExamples, EveryExampleHasAReducedCopy) {
  namespace fs = std::filesystem;
  for (const fs::directory_entry& e : fs::directory_iterator(MUGRAPH_EXAMPLES_DIR)) {
    if (e.path().extension() != ".mu")
      continue;
    EXPECT_TRUE(fs::exists(fs::path(MUGRAPH_TEST_DATA_DIR) / "host_cuda" / e.path().filename()))
        << e.path().filename() << " has no reduced copy in tests/data/host_cuda";
  }
}

// All of them again for sm_80 (A100): one module, the target's shared-memory limit.
TEST(HostCudaExamples, EveryExampleOnA100) {
  std::vector<ir::KernelGraph> graphs;
  std::vector<std::string> names;
  for (const std::string& e : testing::example_names()) {
    graphs.push_back(reduced_example(e));
    names.push_back(e);
  }
  for (const std::string e : {"gqa.split_kv"}) {
    graphs.push_back(reduced_example(e));
    names.push_back(e);
  }
  EXPECT_EQ(run_graphs(graphs, names, target::a100()).size(), graphs.size());
}

// Must-fail: issue 20's race planted back into real generated code. Kernel 2 of flash decoding
// (forloop = 1) loads its loop-invariant tiles with cp.async; deleting the barrier after the
// wait (what the generator emitted before the fix: wait, ops, barrier) lets threads read tiles
// that other threads' copies land: the checker must say so, naming the kernel and an op.
TEST(HostCudaExamples, PlantedMissingBarrierAfterWaitIsReported) {
  const ir::KernelGraph g = reduced_example("gqa.flash_decoding");
  auto m = driver::generate_cuda({{"graph", &g}}, target::h100());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string kernel2 = "graph_op1_kernel(";
  const size_t k = m->source.find(kernel2);
  ASSERT_NE(k, std::string::npos);
  const std::string wait = "mg::cp_async_wait<0>();\n";
  const size_t w = m->source.find(wait, k);
  ASSERT_NE(w, std::string::npos);
  const size_t b = m->source.find("__syncthreads();\n", w);
  ASSERT_NE(b, std::string::npos);
  ASSERT_EQ(m->source.find_first_not_of(" \n", w + wait.size()), b)
      << "the barrier no longer follows the wait directly: update this test";
  codegen::Module planted = *m;
  planted.source.erase(b, std::string("__syncthreads();\n").size());
  auto mod = runtime::compile_host_cuda(planted, {});
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  driver::CpuBuffers buf = driver::make_buffers(g, 1);
  auto r = (*mod)->run(0, g, buf.inputs, buf.outputs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::printf("the checker on the planted race:\n%s", r->report().c_str());
  bool race = false;
  for (const runtime::HostCudaFinding& f : r->findings)
    if (f.kernel == "graph_op1_kernel" &&
        (f.kind == "race-raw" || f.kind == "uninitialized-shared") && !f.op.empty() &&
        f.space == "shared")
      race = true;
  EXPECT_TRUE(race) << r->report();
}

// Issue 20's A100 limit: what the targets allow per block must fit the architecture's opt-in
// limit, which the harness enforces at cudaFuncSetAttribute like the driver would.
TEST(HostCudaExamples, TargetSharedMemoryFitsTheArchitecture) {
  EXPECT_LE(target::a100().shared_memory_per_block, runtime::max_dynamic_shared_memory(80));
  EXPECT_LE(target::h100().shared_memory_per_block, runtime::max_dynamic_shared_memory(90));
}

// The discovery candidates (tests/codegen/candidates.h), all of one space in one module.
void run_candidates(const std::string& space) {
  const std::vector<ir::KernelGraph> graphs =
      testing::program_and_candidates(space, testing::discovery_options(space), target::h100());
  ASSERT_GE(graphs.size(), 2u) << space << ": the search found nothing";
  std::vector<std::string> names;
  for (size_t i = 0; i < graphs.size(); ++i)
    names.push_back("c" + std::to_string(i));
  run_graphs(graphs, names, target::h100());
}

TEST(HostCudaCandidates, GatedMlp) { run_candidates("gated_mlp"); }
TEST(HostCudaCandidates, Attention) { run_candidates("attention"); }
TEST(HostCudaCandidates, Lora) { run_candidates("lora"); }
TEST(HostCudaCandidates, LoraSingleKernel) { run_candidates("lora_single_kernel"); }
TEST(HostCudaCandidates, RmsNorm) { run_candidates("rms_norm_matmul"); }
TEST(HostCudaCandidates, NTrans) { run_candidates("ntrans"); }
TEST(HostCudaCandidates, GqaDecode) { run_candidates("gqa_decode"); }
TEST(HostCudaCandidates, QkNorm) { run_candidates("qknorm"); }

}  // namespace
}  // namespace mugraph
