// Generated CUDA on a GPU (ctest label `gpu`): every example and every discovery candidate runs
// on seeded inputs with poisoned outputs (0xFF bytes: NaN in every storage type) and matches the
// float64 interpreter within the dtype's tolerance; timing works with and without CUDA graphs.
// On a machine with no GPU at all every test here skips, saying why (the driver's error); on a
// machine that shows a GPU (a /dev/nvidia* device node, nvidia-smi on PATH) but where opening
// it fails, they fail: that is a broken driver setup, not a missing GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cuda_test_util.h"
#include "driver/tune.h"
#include "ir/text.h"

namespace mugraph {
namespace {

using testing::candidates;
using testing::examples;
using testing::Named;
using testing::test_cuda_jit;

// ---- on a GPU -----------------------------------------------------------------------------------

// What shows that this machine has an NVIDIA GPU, whether or not the driver works: the
// device nodes the kernel driver creates (`dev_dir`/nvidiactl, nvidia0, ...) or nvidia-smi in
// a directory of `path` (a PATH value). Empty if neither.
std::string gpu_evidence(const std::string& dev_dir, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dev_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "nvidiactl" || (name.rfind("nvidia", 0) == 0 && name.size() > 6 &&
                                std::isdigit(static_cast<unsigned char>(name[6])) != 0))
      return "device node " + e.path().string();
  }
  std::stringstream dirs(path);
  for (std::string d; std::getline(dirs, d, ':');) {
    const fs::path smi = fs::path(d.empty() ? "." : d) / "nvidia-smi";
    if (::access(smi.c_str(), X_OK) == 0) return smi.string() + " on PATH";
  }
  return "";
}

std::string gpu_evidence() {
  const char* path = std::getenv("PATH");
  return gpu_evidence("/dev", path == nullptr ? "" : path);
}

// What a GPU test does when opening device 0 failed with `error`: skip on a machine that shows
// no GPU (`evidence` empty), fail on one that does (a broken driver must not look like a pass).
struct NoDevice {
  bool fail = false;
  std::string why;
};
NoDevice when_no_device(const std::string& error, const std::string& evidence) {
  if (evidence.empty())
    return {false, "no GPU (no /dev/nvidia* device node, no nvidia-smi on PATH): " + error};
  return {true, "this machine has a GPU (" + evidence + ") but opening it failed: " + error};
}

// The device, or nullptr (then the caller skips or fails per when_no_device).
std::shared_ptr<runtime::CudaDevice> open_device() {
  static auto dev = runtime::open_cuda_device(0);
  if (!dev.ok()) return nullptr;
  return dev.value();
}

#define MG_REQUIRE_GPU(dev)                                                                  \
  auto dev = open_device();                                                                  \
  if (dev == nullptr) {                                                                      \
    const NoDevice no = when_no_device(runtime::open_cuda_device(0).status().message(),      \
                                       gpu_evidence());                                      \
    if (no.fail) FAIL() << no.why;                                                           \
    GTEST_SKIP() << no.why;                                                                  \
  }

// The skip-or-fail decision itself, on fake /dev and PATH directories (runs without a GPU).
TEST(GpuPresence, ABrokenDriverOnAMachineWithAGpuFailsAndNoGpuSkips) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("mugraph-gpu-presence-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "dev");
  fs::create_directories(root / "bin");
  const std::string dev = (root / "dev").string(), bin = (root / "bin").string();
  std::ofstream(root / "dev" / "null");
  EXPECT_EQ(gpu_evidence(dev, bin), "");
  const NoDevice none = when_no_device("CUDA driver: cuInit failed", "");
  EXPECT_FALSE(none.fail);
  EXPECT_NE(none.why.find("no GPU (no /dev/nvidia* device node"), std::string::npos) << none.why;

  std::ofstream(root / "dev" / "nvidia0");
  EXPECT_EQ(gpu_evidence(dev, bin), "device node " + (root / "dev" / "nvidia0").string());
  fs::remove(root / "dev" / "nvidia0");
  std::ofstream(root / "bin" / "nvidia-smi") << "#!/bin/sh\n";
  fs::permissions(root / "bin" / "nvidia-smi", fs::perms::owner_all);
  EXPECT_EQ(gpu_evidence(dev, "/nonexistent:" + bin), (root / "bin" / "nvidia-smi").string() + " on PATH");
  const NoDevice broken = when_no_device("CUDA driver: cuInit failed", gpu_evidence(dev, bin));
  EXPECT_TRUE(broken.fail);
  EXPECT_NE(broken.why.find("has a GPU (" + bin + "/nvidia-smi on PATH) but opening it failed: "
                            "CUDA driver: cuInit failed"),
            std::string::npos)
      << broken.why;
  fs::remove_all(root);
}

// Passes (not skips) on a working GPU, so that bench/gpu/run.sh can treat any skip there as a
// broken setup.
TEST(CudaDevice, WithoutADriverOpeningIsAClearError) {
  auto dev = runtime::open_cuda_device(0);
  if (dev.ok()) {
    EXPECT_FALSE(dev.value()->name().empty());
    return;
  }
  const std::string msg = dev.status().message();
  EXPECT_TRUE(msg.find("no NVIDIA driver") != std::string::npos ||
              msg.find("CUDA driver") != std::string::npos ||
              msg.find("no CUDA device") != std::string::npos)
      << msg;
}

void check_on_gpu(const Named& n, const std::shared_ptr<runtime::CudaDevice>& dev) {
  auto m = driver::load_cuda(n.named(), target::h100(), test_cuda_jit(), dev);
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t i = 0; i < n.graphs.size(); ++i) {
    auto diffs = driver::check_gpu(*m.value(), i, n.graphs[i], 7, dev);
    ASSERT_TRUE(diffs.ok()) << n.names[i] << ": " << diffs.status().message();
    for (size_t o = 0; o < diffs.value().size(); ++o) {
      const driver::OutputDiff& d = diffs.value()[o];
      if (std::isnan(d.max_rel)) {
        // As on the CPU: only where the program itself overflows its storage type.
        auto s = driver::run_graph(n.graphs[i], 7, driver::Precision::kFloat);
        ASSERT_TRUE(s.ok());
        EXPECT_GT(s.value()[o].non_finite, 0) << n.names[i] << " output " << d.name;
        continue;
      }
      EXPECT_LE(d.max_rel, driver::gpu_tolerance(n.graphs[i]))
          << n.names[i] << " output " << d.name << "\n" << ir::print_graph(n.graphs[i]);
    }
  }
}

TEST(GpuExecution, EveryExampleMatchesTheInterpreter) {
  MG_REQUIRE_GPU(dev);
  check_on_gpu(examples(), dev);
}

// One test per program, cheapest discovery first, so that a time-limited run on the GPU machine
// (bench/gpu/run.sh) says which programs it covered.
class GpuCandidates : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuCandidates, EveryDiscoveryCandidateMatchesTheInterpreter) {
  MG_REQUIRE_GPU(dev);
  check_on_gpu(candidates(GetParam()), dev);
}

INSTANTIATE_TEST_SUITE_P(GpuExecution, GpuCandidates,
                         ::testing::Values("lora", "gated_mlp", "rms_norm_matmul", "attention",
                                           "ntrans", "qknorm", "gqa_decode"));

TEST(GpuExecution, TimingWithAndWithoutCudaGraphs) {
  MG_REQUIRE_GPU(dev);
  const ir::KernelGraph g = testing::load_example("rms_norm_matmul.fused");
  auto m = driver::load_cuda({{"graph", &g}}, target::h100(), test_cuda_jit(), dev);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto b = driver::make_gpu_buffers(g, 1, dev);
  ASSERT_TRUE(b.ok()) << b.status().message();
  for (bool graph : {false, true}) {
    auto t = m.value()->time(0, b->in(), b->out(), 5, graph);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_GT(t.value(), 0);
    EXPECT_LT(t.value(), 0.1);
  }
}

// mugraph tune on the GPU (issue 23): the tilings are measured there, the best is checked
// against the program's GPU run, certified, and timed against the program.
TEST(GpuExecution, TuneMeasuresTilingsOnTheGpu) {
  MG_REQUIRE_GPU(dev);
  const ir::KernelGraph program =
      driver::load_graph_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/tune/attention.mu").value();
  driver::TuneOptions o;
  o.target = dev->sm_arch() >= 90 ? target::h100() : target::a100();
  o.cuda_jit = test_cuda_jit();
  auto r = driver::tune(program, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->measured);
  EXPECT_EQ(r->device, dev->name());
  EXPECT_FALSE(r->search.measured.empty());
  ASSERT_TRUE(r->best.has_value()) << driver::format_tune_report(*r);
  EXPECT_EQ(r->certified.kind, verify::VerdictKind::kVerified);
  EXPECT_GT(r->speedup, 0);
}

}  // namespace
}  // namespace mugraph
