// Input Dims / Input type text as torch.profiler writes it, parsed; damaged text is "unknown".
#include "analysis/operator/input_shapes.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace input_shapes_test {

TEST(InputShapes, DimsOfTensorsAndNonTensors) {
  const auto dims = parse_input_dims("[[16, 5185, 64], [16, 64, 5185], [], [7]]");
  ASSERT_TRUE(dims.has_value());
  ASSERT_EQ(dims->size(), 4u);
  EXPECT_EQ((*dims)[0], (Shape{16, 5185, 64}));
  EXPECT_EQ((*dims)[1], (Shape{16, 64, 5185}));
  EXPECT_TRUE((*dims)[2].empty());
  EXPECT_EQ((*dims)[3], Shape{7});
  EXPECT_EQ(element_count((*dims)[0]), 16 * 5185 * 64);
  EXPECT_EQ(element_count((*dims)[2]), 1);  // a 0-d tensor or a scalar
  EXPECT_TRUE(parse_input_dims("[]").has_value());
  EXPECT_TRUE(parse_input_dims(" [ [1,2] ,[3] ] ").has_value());
}

TEST(InputShapes, DamagedDimsAreUnknown) {
  for (const char* bad : {"", "[", "[[1, 2]", "[[1, -2]]", "[[1.5]]", "[[1], 2]", "[[1]] x", "[[99999999999999999999]]",
                          "[[1,]]", "[[,1]]", "{}"})
    EXPECT_FALSE(parse_input_dims(bad).has_value()) << bad;
}

TEST(InputShapes, Types) {
  const auto types = parse_input_types(R"(["c10::BFloat16", "float", "", "Scalar", "a\"b"])");
  ASSERT_TRUE(types.has_value());
  EXPECT_EQ(*types, (std::vector<std::string>{"c10::BFloat16", "float", "", "Scalar", "a\"b"}));
  EXPECT_FALSE(parse_input_types(R"(["float", 3])").has_value());
  EXPECT_FALSE(parse_input_types(R"(["float")").has_value());
}

}  // namespace input_shapes_test
}  // namespace
}  // namespace ferret
