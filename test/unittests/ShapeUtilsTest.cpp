//===- ShapeUtilsTest.cpp
//---------------------------------------------------===//
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace hetpar;
using mlir::ShapedType;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

TEST(ShapeUtils, BroadcastNumpyRules) {
  // numpy: (2,1,4) with (3,1) -> (2,3,4)
  auto r = broadcastShapes({2, 1, 4}, {3, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (llvm::SmallVector<int64_t>{2, 3, 4}));
  // Scalars broadcast to anything.
  EXPECT_EQ(*broadcastShapes({}, {5}), (llvm::SmallVector<int64_t>{5}));
  // 3 against 4: no broadcast.
  EXPECT_FALSE(broadcastShapes({3}, {4}));
}

TEST(ShapeUtils, BroadcastDynamic) {
  // A dynamic extent against a static one other than 1 must be that extent (or
  // 1).
  EXPECT_EQ(*broadcastShapes({kDyn, 4}, {3, 4}),
            (llvm::SmallVector<int64_t>{3, 4}));
  // Against 1 it stays dynamic.
  EXPECT_EQ(*broadcastShapes({kDyn}, {1}), (llvm::SmallVector<int64_t>{kDyn}));
}

TEST(ShapeUtils, Unidirectional) {
  EXPECT_TRUE(isUnidirectionalBroadcastable({4}, {2, 3, 4}));
  EXPECT_TRUE(isUnidirectionalBroadcastable({3, 1}, {2, 3, 4}));
  EXPECT_FALSE(isUnidirectionalBroadcastable({3}, {2, 3, 4}));
  EXPECT_FALSE(isUnidirectionalBroadcastable({1, 2, 3, 4}, {2, 3, 4}));
}

TEST(ShapeUtils, NormalizeAxis) {
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_EQ(normalizeAxis(0, 3), 0);
  EXPECT_FALSE(normalizeAxis(3, 3));
  EXPECT_FALSE(normalizeAxis(-4, 3));
}

TEST(ShapeUtils, NumElementsOverflowAndDynamic) {
  EXPECT_EQ(getNumElements({2, 3, 4}), 24);
  EXPECT_EQ(getNumElements({}), 1);
  EXPECT_EQ(getNumElements({0, 5}), 0);
  EXPECT_FALSE(getNumElements({kDyn, 2}));
  // 2^32 * 2^32 overflows int64.
  EXPECT_FALSE(getNumElements({int64_t(1) << 32, int64_t(1) << 32}));
}

TEST(ShapeUtils, FormatShape) {
  EXPECT_EQ(formatShape({2, kDyn, 4}), "2x?x4");
  EXPECT_EQ(formatShape({}), "scalar");
}

TEST(ShapeUtils, ParseInputShapeSpec) {
  auto a = parseInputShapeSpec("input_ids=2x128");
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(a->first, "input_ids");
  EXPECT_EQ(a->second, (llvm::SmallVector<int64_t>{2, 128}));
  auto b = parseInputShapeSpec("x=1,?,3");
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(b->second, (llvm::SmallVector<int64_t>{1, kDyn, 3}));
  auto scalar = parseInputShapeSpec("n=");
  ASSERT_TRUE(bool(scalar));
  EXPECT_TRUE(scalar->second.empty());
  // Names may contain '=' only before the last one; bad dims are errors.
  auto bad = parseInputShapeSpec("x=2xabc");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("'abc' is not a dimension"),
            std::string::npos);
  auto noEq = parseInputShapeSpec("x");
  ASSERT_FALSE(bool(noEq));
  llvm::consumeError(noEq.takeError());
  // -1 is not a way to say "dynamic" (that is ?): it is rejected like -3.
  auto minusOne = parseInputShapeSpec("x=-1x16");
  ASSERT_FALSE(bool(minusOne));
  llvm::consumeError(minusOne.takeError());
  auto negative = parseInputShapeSpec("x=-3");
  ASSERT_FALSE(bool(negative));
  llvm::consumeError(negative.takeError());
}

TEST(ShapeUtils, RefineType) {
  mlir::MLIRContext ctx;
  auto f32 = mlir::Float32Type::get(&ctx);
  auto dyn = mlir::RankedTensorType::get({kDyn, 4}, f32);
  auto stat = mlir::RankedTensorType::get({2, 4}, f32);
  auto unranked = mlir::UnrankedTensorType::get(f32);
  EXPECT_EQ(*refineType(dyn, stat), mlir::Type(stat));
  EXPECT_EQ(*refineType(unranked, dyn), mlir::Type(dyn));
  EXPECT_TRUE(
      mlir::failed(refineType(stat, mlir::RankedTensorType::get({3, 4}, f32))));
  EXPECT_TRUE(mlir::failed(
      refineType(stat, mlir::RankedTensorType::get({2, 4, 1}, f32))));
  EXPECT_TRUE(mlir::failed(refineType(
      stat,
      mlir::RankedTensorType::get({2, 4}, mlir::Float16Type::get(&ctx)))));
}
} // namespace
