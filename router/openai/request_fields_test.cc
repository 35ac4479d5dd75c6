#include "router/openai/request_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router::openai {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// Each JSON type, for fields that want another.
const Json kEveryType[] = {nullptr, true, 7, -3, 18446744073709551615ull, 2.5, "s",
                           Json::array({1}), Json::object({{"k", 1}})};

TEST(RequestFieldsTest, WrongTypesAreNamedErrorsNotExceptions) {
  for (const Json& v : kEveryType) {
    const Json body = {{"f", v}};
    const RequestFields f(body, "messages[2]");
    std::string s = "kept";
    bool b = false;
    int64_t i = 0;
    double d = 0;
    const Json* o = nullptr;
    std::optional<ApiError> e;
    EXPECT_NO_THROW(e = f.String("f", &s));
    if (v.is_string() || v.is_null()) {
      EXPECT_FALSE(e.has_value()) << v;
    } else {
      ASSERT_TRUE(e.has_value()) << v;
      EXPECT_EQ(e->param, "messages[2].f");
      EXPECT_THAT(e->message, HasSubstr("'messages[2].f' must be a string, got "));
      EXPECT_EQ(e->http_status, 400);
      EXPECT_EQ(s, "kept");
    }
    EXPECT_NO_THROW(e = f.Bool("f", &b));
    EXPECT_EQ(e.has_value(), !(v.is_boolean() || v.is_null())) << v;
    EXPECT_NO_THROW(e = f.Int("f", -10, 10, &i));
    EXPECT_EQ(e.has_value(), !(v.is_null() || v == 7 || v == -3)) << v;
    EXPECT_NO_THROW(e = f.Number("f", -10, 10, &d));
    EXPECT_EQ(e.has_value(), !(v.is_null() || v == 7 || v == -3 || v == 2.5)) << v;
    EXPECT_NO_THROW(e = f.Object("f", &o));
    EXPECT_EQ(e.has_value(), !(v.is_null() || v.is_object())) << v;
    EXPECT_NO_THROW(e = f.Array("f", &o));
    EXPECT_EQ(e.has_value(), !(v.is_null() || v.is_array())) << v;
  }
}

TEST(RequestFieldsTest, ValuesAndRanges) {
  const Json body = {{"s", "x"}, {"b", true}, {"i", 5}, {"d", 0.5}, {"n", nullptr}, {"u", 1u}};
  const RequestFields f(body, "");
  std::string s;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  EXPECT_FALSE(f.String("s", &s));
  EXPECT_EQ(s, "x");
  EXPECT_FALSE(f.Bool("b", &b));
  EXPECT_TRUE(b);
  EXPECT_FALSE(f.Int("i", 0, 10, &i));
  EXPECT_EQ(i, 5);
  EXPECT_FALSE(f.Int("u", 0, 10, &i));
  EXPECT_EQ(i, 1);
  EXPECT_FALSE(f.Number("d", 0, 1, &d));
  EXPECT_EQ(d, 0.5);
  // Out of range names the field and the range.
  std::optional<ApiError> e = f.Int("i", 0, 4, &i);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "i");
  EXPECT_THAT(e->message, HasSubstr("between 0 and 4, got 5"));
  // Null and absent read as absent.
  EXPECT_FALSE(f.Has("n"));
  EXPECT_FALSE(f.Has("missing"));
  s = "unchanged";
  EXPECT_FALSE(f.String("n", &s));
  EXPECT_EQ(s, "unchanged");
  // A body that is not an object has no fields.
  const Json list = Json::array({1, 2});
  EXPECT_FALSE(RequestFields(list, "").Has("0"));
}

TEST(RequestFieldsTest, ValueReads) {
  EXPECT_EQ(*AsString(Json("a")), "a");
  EXPECT_EQ(AsString(Json(1)), nullptr);
  EXPECT_EQ(AsBool(Json(1)), std::nullopt);
  EXPECT_EQ(AsInt(Json(2.0)), std::nullopt);  // A float is not an integer.
  EXPECT_EQ(AsInt(Json(18446744073709551615ull)), std::nullopt);  // Past int64.
  EXPECT_EQ(AsNumber(Json(3)), 3.0);
  EXPECT_STREQ(JsonTypeName(Json::array()), "array");
}

}  // namespace
}  // namespace semmoe::router::openai
