#include "support/status.h"

#include <gtest/gtest.h>

namespace mugraph {
namespace {

Result<int> half(int x) {
  if (x % 2) return error("odd number ", x);
  return x / 2;
}

Result<int> quarter(int x) {
  MG_ASSIGN_OR_RETURN(int h, half(x));
  return half(h);
}

TEST(Status, ResultCarriesValueOrMessage) {
  EXPECT_EQ(*quarter(8), 2);
  EXPECT_EQ(quarter(6).status().message(), "odd number 3");
  EXPECT_EQ(error("a", 1).with_context("ctx: ").message(), "ctx: a1");
  EXPECT_TRUE(ok_status().with_context("x").ok());
}

TEST(Status, CheckThrowsInternalErrorInEveryBuild) {
  EXPECT_THROW(MG_CHECK(1 + 1 == 3, "math"), InternalError);
  EXPECT_THROW((void)half(3).value(), InternalError);
  try {
    MG_CHECK(false, "detail " << 42);
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("detail 42"), std::string::npos);
  }
}

}  // namespace
}  // namespace mugraph
