// Generated CUDA on a GPU (ctest label `gpu`): every example and every discovery candidate runs
// on seeded inputs with poisoned outputs (0xFF bytes: NaN in every storage type) and matches the
// float64 interpreter within the dtype's tolerance; timing works with and without CUDA graphs.
// Without a GPU every test here skips, saying why (the driver's error).
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/cuda_test_util.h"
#include "ir/text.h"

namespace mugraph {
namespace {

using testing::candidates;
using testing::examples;
using testing::Named;
using testing::test_cuda_jit;

// ---- on a GPU -----------------------------------------------------------------------------------

// The device, or a skip that says why there is none.
std::shared_ptr<runtime::CudaDevice> device_or_skip() {
  static auto dev = runtime::open_cuda_device(0);
  if (!dev.ok()) return nullptr;
  return dev.value();
}

#define MG_REQUIRE_GPU(dev)                                                                  \
  auto dev = device_or_skip();                                                               \
  if (dev == nullptr) GTEST_SKIP() << "no GPU: " << runtime::open_cuda_device(0).status().message()

TEST(CudaDevice, WithoutADriverOpeningIsAClearError) {
  auto dev = runtime::open_cuda_device(0);
  if (dev.ok()) GTEST_SKIP() << "a GPU is present: " << dev.value()->name();
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

TEST(GpuExecution, EveryDiscoveryCandidateMatchesTheInterpreter) {
  MG_REQUIRE_GPU(dev);
  for (const std::string p :
       {"gated_mlp", "attention", "lora", "rms_norm_matmul", "ntrans", "gqa_decode", "qknorm"}) {
    SCOPED_TRACE(p);
    check_on_gpu(candidates(p), dev);
  }
}

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

}  // namespace
}  // namespace mugraph
