// core/params.h: schemas declare typed parameters with validators; validate names the problem; Params
// holds a value for every declared name and refuses reads of the wrong type or of undeclared names.
#include "core/params.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/check.h"

namespace bagua {
namespace {

ParamSchema example() {
  ParamSchema s;
  s.add_bool("hierarchical", true, "two levels")
      .add_int("period", 4, "steps between averages", 1, 64)
      .add_double("lr", 0.1, "learning rate", 0.0, 10.0, /*min_exclusive=*/true)
      .add_string("mode", "ring", "peer mode", {"all", "ring"})
      .add_string("label", "", "any text");
  return s;
}

TEST(ParamSchema, DeclaresEveryParameterWithItsTypeAndDefault) {
  const ParamSchema s = example();
  ASSERT_EQ(s.specs().size(), 5u);
  EXPECT_EQ(s.specs()[0].name, "hierarchical");  // declaration order is kept
  const ParamSpec* period = s.find("period");
  ASSERT_NE(period, nullptr);
  EXPECT_EQ(period->type, ParamType::kInt);
  EXPECT_EQ(std::get<int64_t>(period->default_value), 4);
  EXPECT_EQ(*period->min, 1);
  EXPECT_EQ(*period->max, 64);
  EXPECT_EQ(s.find("absent"), nullptr);
  EXPECT_EQ(to_string(ParamType::kBool), "bool");
  EXPECT_EQ(to_string(ParamType::kInt), "integer");
  EXPECT_EQ(to_string(ParamType::kDouble), "number");
  EXPECT_EQ(to_string(ParamType::kString), "string");
  EXPECT_EQ(to_string(ParamValue{true}), "true");
  EXPECT_EQ(to_string(ParamValue{int64_t{-3}}), "-3");
  EXPECT_EQ(to_string(ParamValue{0.25}), "0.25");
  EXPECT_EQ(to_string(ParamValue{std::string("x")}), "\"x\"");
}

TEST(ParamSchema, ValidateAcceptsGoodValuesAndNamesWhatIsWrong) {
  const ParamSchema s = example();
  EXPECT_FALSE(s.validate("hierarchical", false).has_value());
  EXPECT_FALSE(s.validate("period", int64_t{1}).has_value());   // min is inclusive
  EXPECT_FALSE(s.validate("period", int64_t{64}).has_value());  // max is inclusive
  EXPECT_FALSE(s.validate("lr", 10.0).has_value());
  EXPECT_FALSE(s.validate("lr", int64_t{2}).has_value());  // an integer where a number is expected
  EXPECT_FALSE(s.validate("mode", std::string("all")).has_value());
  EXPECT_FALSE(s.validate("label", std::string("anything")).has_value());  // no choices: any string

  EXPECT_EQ(s.validate("nope", true), "unknown parameter");
  EXPECT_EQ(s.validate("hierarchical", int64_t{3}), "expected bool, got integer 3");
  EXPECT_EQ(s.validate("period", 2.5), "expected integer, got number 2.5");  // no silent truncation
  EXPECT_EQ(s.validate("mode", true), "expected string, got bool true");
  EXPECT_EQ(s.validate("period", int64_t{0}), "must be >= 1, got 0");
  EXPECT_EQ(s.validate("period", int64_t{65}), "must be <= 64, got 65");
  EXPECT_EQ(s.validate("lr", 0.0), "must be > 0, got 0");  // min is exclusive here
  EXPECT_EQ(s.validate("lr", 10.5), "must be <= 10, got 10.5");
  EXPECT_EQ(s.validate("lr", std::numeric_limits<double>::infinity()), "must be finite, got inf");
  EXPECT_EQ(s.validate("mode", std::string("star")), "must be one of all|ring, got \"star\"");
}

TEST(ParamSchema, ExtendAndAddCarryOtherSchemasEntries) {
  ParamSchema inner;
  inner.add_int("chunk_size", 512, "elements per chunk", 0);
  ParamSchema outer;
  outer.add_bool("average", true, "average, else sum").extend(inner);
  ParamSpec renamed = *inner.find("chunk_size");
  renamed.name = "qsgd_chunk_size";
  outer.add(renamed);
  ASSERT_NE(outer.find("chunk_size"), nullptr);
  ASSERT_NE(outer.find("qsgd_chunk_size"), nullptr);
  EXPECT_EQ(outer.validate("qsgd_chunk_size", int64_t{-1}), "must be >= 0, got -1");
}

TEST(Params, HoldEveryDefaultOverriddenByTheGivenValues) {
  const ParamSchema s = example();
  const Params p(s, {{"period", int64_t{8}}, {"mode", std::string("all")}});
  EXPECT_TRUE(p.get_bool("hierarchical"));
  EXPECT_EQ(p.get_int("period"), 8);
  EXPECT_DOUBLE_EQ(p.get_double("lr"), 0.1);
  EXPECT_EQ(p.get_string("mode"), "all");
  EXPECT_TRUE(p.has("label"));
  EXPECT_FALSE(p.has("absent"));
  EXPECT_EQ(p.values().size(), 5u);
}

TEST(Params, AnIntegerReadsAsANumber) {
  ParamSchema s;
  s.add_double("gamma", 0.5, "step");
  const Params p(s, {{"gamma", int64_t{1}}});  // JSON's 1 for a number parameter
  EXPECT_DOUBLE_EQ(p.get_double("gamma"), 1.0);
}

TEST(Params, ReadsOfUndeclaredNamesOrTheWrongTypeAreInternalErrors) {
  const ParamSchema s = example();
  const Params p(s);
  EXPECT_THROW(p.get_bool("absent"), InternalError);
  EXPECT_THROW(p.get_int("lr"), InternalError);
  EXPECT_THROW(p.get_string("period"), InternalError);
  EXPECT_THROW(p.get_bool("mode"), InternalError);
  // Values for names the schema does not declare are a programming error too.
  EXPECT_THROW(Params(s, {{"absent", true}}), InternalError);
  // set() replaces a value (the type is checked when read).
  Params q(s);
  q.set("period", int64_t{2});
  EXPECT_EQ(q.get_int("period"), 2);
}

}  // namespace
}  // namespace bagua
