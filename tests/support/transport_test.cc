// In-process ranks (support/transport.h's LocalHub): messages arrive in order with their
// source and tag; a killed rank sends and receives nothing and falls silent; a forgotten peer
// hears nothing more. Without an MPI launcher join_mpi is a single process (null, no error).
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "support/transport.h"

namespace mugraph {
namespace {

TEST(Transport, LocalRanksDeliverInOrder) {
  LocalHub hub(3);
  Transport& a = hub.endpoint(0);
  Transport& b = hub.endpoint(2);
  EXPECT_EQ(a.size(), 3);
  EXPECT_EQ(b.rank(), 2);
  a.send(2, 7, "first");
  a.send(2, 8, "second");
  hub.endpoint(1).send(2, 9, "");
  auto m1 = b.poll(), m2 = b.poll(), m3 = b.poll();
  ASSERT_TRUE(m1 && m2 && m3);
  EXPECT_EQ(m1->source, 0);
  EXPECT_EQ(m1->tag, 7);
  EXPECT_EQ(m1->data, "first");
  EXPECT_EQ(m2->data, "second");
  EXPECT_EQ(m3->source, 1);
  EXPECT_FALSE(b.poll());
  EXPECT_FALSE(a.poll());
  EXPECT_EQ(a.silent_seconds(2), 0.0);
}

TEST(Transport, KilledAndForgottenRanksFallSilent) {
  LocalHub hub(3);
  hub.endpoint(0).send(1, 1, "before");
  hub.kill(1);
  EXPECT_TRUE(hub.killed(1));
  EXPECT_FALSE(hub.endpoint(1).poll());  // its inbox died with it
  hub.endpoint(1).send(0, 1, "from the dead");
  hub.endpoint(0).send(1, 1, "to the dead");
  EXPECT_FALSE(hub.endpoint(0).poll());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(hub.endpoint(0).silent_seconds(1), 0.015);
  EXPECT_GT(hub.endpoint(1).silent_seconds(0), 1e300);  // a dead rank hears nothing
  // Rank 0 forgets rank 2: rank 2 hears nothing more from it, and hears it fall silent.
  hub.endpoint(0).forget(2);
  hub.endpoint(0).send(2, 1, "never");
  EXPECT_FALSE(hub.endpoint(2).poll());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(hub.endpoint(2).silent_seconds(0), 0.015);
  EXPECT_EQ(hub.endpoint(0).silent_seconds(2), 0.0);
}

TEST(Transport, NoLauncherMeansOneProcess) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE"))
    GTEST_SKIP() << "run under an MPI launcher";
  int argc = 1;
  char name[] = "test";
  char* args[] = {name, nullptr};
  char** argv = args;
  auto t = join_mpi(&argc, &argv);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, nullptr);
}

}  // namespace
}  // namespace mugraph
