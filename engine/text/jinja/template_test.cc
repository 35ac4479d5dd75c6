// The Jinja subset against Jinja2's answers (as transformers renders chat templates: trim_blocks
// and lstrip_blocks on); errors and limits; random templates never crash. The real templates
// are compared with @huggingface/jinja in //tests:chat_template_test.
#include "engine/text/jinja/template.h"

#include <atomic>
#include <random>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::jinja {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::string> Render(const std::string& source, const std::string& json = "{}",
                                   RenderLimits limits = {}) {
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return t.status();
  absl::StatusOr<Value> vars = Value::FromJson(nlohmann::ordered_json::parse(json));
  if (!vars.ok()) return vars.status();
  return t->Render(*vars, limits);
}

std::string Ok(const std::string& source, const std::string& json = "{}") {
  absl::StatusOr<std::string> out = Render(source, json);
  EXPECT_TRUE(out.ok()) << source << ": " << out.status();
  return out.value_or("<error>");
}

std::string Err(const std::string& source, const std::string& json = "{}") {
  absl::StatusOr<std::string> out = Render(source, json);
  EXPECT_FALSE(out.ok()) << source << " rendered " << out.value_or("");
  return std::string(out.status().message());
}

TEST(TemplateTest, TextAndOutput) {
  EXPECT_EQ(Ok("hello {{ name }}!", R"({"name": "world"})"), "hello world!");
  EXPECT_EQ(Ok("{{ missing }}|{{ none }}|{{ true }}|{{ 1.0 }}|{{ [1, 'a'] }}"),
            "|None|True|1.0|[1, 'a']");
  EXPECT_EQ(Ok("{# a comment #}x"), "x");
  EXPECT_EQ(Ok("{{ 'a' 'b' }}{{ \"q\\\"\\n\" }}"), "abq\"\n");
}

TEST(TemplateTest, WhitespaceControlTrimAndLstripBlocks) {
  // lstrip_blocks + trim_blocks: block tags on their own lines leave no trace.
  EXPECT_EQ(Ok("  {% if true %}\n  x\n  {% endif %}\n  y"), "  x\n  y");
  EXPECT_EQ(Ok("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(Ok("a\n  {{- 'b' -}}\n  c"), "abc");
  EXPECT_EQ(Ok("{% if true +%}\nx{% endif %}"), "\nx");  // '+' keeps the newline.
  EXPECT_EQ(Ok("a {% if true %}b{% endif %}"), "a b");   // Not at a line start: kept.
  EXPECT_EQ(Ok("  {# c #}\nx"), "x");
  EXPECT_EQ(Ok("{{ 'x' }}\ny"), "x\ny");  // Expressions are not trimmed.
}

TEST(TemplateTest, IfElifElse) {
  const std::string t = "{% if n > 2 %}big{% elif n == 2 %}two{% else %}small{% endif %}";
  EXPECT_EQ(Ok(t, R"({"n": 3})"), "big");
  EXPECT_EQ(Ok(t, R"({"n": 2})"), "two");
  EXPECT_EQ(Ok(t, R"({"n": 1})"), "small");
}

TEST(TemplateTest, ForLoopVariablesFilterElseAndControls) {
  EXPECT_EQ(Ok("{% for x in xs %}{{ loop.index0 }}{{ x }}{{ ',' if not loop.last }}{% endfor %}",
               R"({"xs": ["a", "b", "c"]})"),
            "0a,1b,2c");
  EXPECT_EQ(Ok("{% for x in xs if x != 'b' %}{{ loop.index }}/{{ loop.length }}{% endfor %}",
               R"({"xs": ["a", "b", "c"]})"),
            "1/22/2");
  EXPECT_EQ(Ok("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(
      Ok("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
      "b=1;a=2;");
  EXPECT_EQ(Ok("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}"
               "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "013");
  EXPECT_EQ(Ok("{% for m in ms[::-1] %}{{ m }}{% endfor %}", R"({"ms": [1, 2, 3]})"), "321");
  EXPECT_EQ(Ok("{% for x in xs %}{{ loop.previtem }}{% endfor %}", R"({"xs": [1, 2]})"), "1");
}

TEST(TemplateTest, SetScopesAndNamespaces) {
  // A set inside a loop does not leak out (Jinja2 scoping); a namespace carries it.
  EXPECT_EQ(Ok("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(Ok("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}"
               "{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(Ok("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(Ok("{% set s %}in {{ 1 + 1 }}{% endset %}[{{ s }}]"), "[in 2]");
  EXPECT_THAT(Err("{% set x = 1 %}{% set x.y = 2 %}"), HasSubstr("not a namespace()"));
}

TEST(TemplateTest, ExpressionsFollowPython) {
  EXPECT_EQ(Ok("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 3 / 2 }} {{ 2 ** 10 }} {{ 1 + 2.5 }}"),
            "3 -4 2 1.5 1024 3.5");
  EXPECT_EQ(Ok("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }}"), "a1None abab [1, 2]");
  EXPECT_EQ(Ok("{{ 'b' in 'abc' }} {{ 2 not in [1, 2] }} {{ 'k' in {'k': 1} }}"),
            "True False True");
  EXPECT_EQ(Ok("{{ 1 if false }}|{{ 1 if false else 2 }}|{{ not 1 == 2 and 3 or 4 }}"), "|2|3");
  EXPECT_EQ(
      Ok("{{ {'a': {'b': 1}}['a']['b'] }}{{ xs[-1] }}{{ xs.0 }}{{ xs[5] }}", R"({"xs": [1, 2]})"),
      "121");
  EXPECT_EQ(Ok("{{ 'héllo'[1] }}{{ 'héllo'[1:3] }}{{ 'abc'[::-1] }}{{ [1,2,3,4][1::2] }}"),
            "éélcba[2, 4]");
}

TEST(TemplateTest, StringAndDictMethods) {
  EXPECT_EQ(
      Ok("{{ s.startswith('<t>') }} {{ s.endswith(('x', '</t>')) }}", R"({"s": "<t>hi</t>"})"),
      "True True");
  EXPECT_EQ(Ok("{{ s.split('</think>')[-1].lstrip('\\n') }}|{{ s.split('</think>')[0] }}",
               R"({"s": "a</think>\n\nb"})"),
            "b|a");
  EXPECT_EQ(Ok("{{ '  x '.strip() }}{{ 'xxaxx'.strip('x') }}{{ 'a b  c'.split() }}"),
            "xa['a', 'b', 'c']");
  EXPECT_EQ(Ok("{{ 'a,b,c'.split(',', 1) }} {{ 'Ab'.upper() }}{{ 'Ab'.lower() }}"
               "{{ 'hi there'.title() }} {{ 'aXa'.replace('a', 'b') }}"),
            "['a', 'b,c'] ABabHi There bXb");
  EXPECT_EQ(Ok("{{ d.get('x', 5) }}{{ d.get('a') }}{{ d.keys() | list }}", R"({"d": {"a": 1}})"),
            "51['a']");
  EXPECT_THAT(Err("{{ 'a'.nosuch() }}"), HasSubstr("has no method 'nosuch'"));
}

TEST(TemplateTest, FiltersAndTests) {
  EXPECT_EQ(Ok("{{ xs | length }} {{ 'héllo' | length }} {{ xs | first }} {{ xs | last }}",
               R"({"xs": [1, 2, 3]})"),
            "3 5 1 3");
  EXPECT_EQ(Ok("{{ x | tojson }}", R"({"x": {"a": [1, "é"], "b": null}})"),
            R"({"a": [1, "é"], "b": null})");
  EXPECT_EQ(Ok("{{ x | tojson(indent=2) }}", R"({"x": [1]})"), "[\n  1\n]");
  EXPECT_EQ(Ok("{{ ' x ' | trim }}{{ 'a' | upper }}{{ nope | default('d') }}"
               "{{ '' | default('e', true) }}{{ xs | join('-') }}{{ xs | reverse | list }}",
               R"({"xs": [1, 2]})"),
            "xAde1-2[2, 1]");
  EXPECT_EQ(Ok("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}",
               R"({"ms": [{"role": "user", "c": 1}, {"role": "x", "c": 2}]})"),
            "[1]");
  EXPECT_EQ(Ok("{{ x is defined }}{{ y is not defined }}{{ n is none }}{{ s is string }}"
               "{{ f is false }}{{ 1 is number }}{{ 4 is divisibleby 2 }}{{ d is mapping }}",
               R"({"x": 1, "n": null, "s": "s", "f": false, "d": {}})"),
            "TrueTrueTrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(Ok("{{ not m.c is none }}", R"({"m": {"c": null}})"), "False");
  EXPECT_THAT(Err("{{ 1 | nosuch }}"), HasSubstr("unknown filter 'nosuch'"));
  EXPECT_THAT(Err("{{ 1 is nosuch }}"), HasSubstr("unknown test 'nosuch'"));
}

TEST(TemplateTest, ErrorsNameTheLineAndTheProblem) {
  EXPECT_THAT(Err("a\n{{ raise_exception('Only user and assistant roles') }}"),
              HasSubstr("template line 2: the chat template refused the request: Only user and "
                        "assistant roles"));
  EXPECT_THAT(Err("{% if x %}"), HasSubstr("missing {% endif %}"));
  EXPECT_THAT(Err("x\n\n{% macro m() %}{% endmacro %}"),
              HasSubstr("template line 3: unsupported statement 'macro'"));
  EXPECT_THAT(Err("{{ 1 +  }}"), HasSubstr("expected an expression"));
  EXPECT_THAT(Err("{{ 'abc }}"), HasSubstr("unterminated string"));
  EXPECT_THAT(Err("{{ x"), HasSubstr("unterminated '{{'"));
  EXPECT_THAT(Err("{# x"), HasSubstr("unterminated comment"));
  EXPECT_THAT(Err("{{ a.b.c }}", R"({"a": {}})"), HasSubstr("'a.b' is undefined"));
  EXPECT_THAT(Err("{{ a + 'x' }}"), HasSubstr("'a' is undefined (operator '+')"));
  EXPECT_THAT(Err("{{ 1 + 'x' }}"), HasSubstr("unsupported operand types for +: int and str"));
  EXPECT_THAT(Err("{{ 1 // 0 }}"), HasSubstr("division by zero"));
  EXPECT_THAT(Err("{{ f() }}"), HasSubstr("'f' is not callable"));
  EXPECT_THAT(Err("{% break %}"), HasSubstr("break outside a loop"));
  EXPECT_THAT(Err("{{ @ }}"), HasSubstr("unexpected character '@'"));
}

TEST(TemplateTest, LimitsStopRunawayTemplates) {
  absl::StatusOr<std::string> out =
      Render("{% for i in range(100) %}{{ 'x' * 100000 }}{% endfor %}", "{}",
             {.max_output_bytes = 1 << 20});
  EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << out.status();
  out = Render("{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}", "{}",
               {.max_steps = 1'000'000});
  EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << out.status();
  EXPECT_TRUE(absl::IsResourceExhausted(Render("{{ range(1000000000) }}").status()));
  // Nesting beyond the parser's limit is refused, not a stack overflow.
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_THAT(Err(deep), HasSubstr("nested too deeply"));
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_THAT(Err(blocks), HasSubstr("nested too deeply"));
  std::string nots = "{{ " + std::string(1, ' ');
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_THAT(Err(nots + "1 }}"), HasSubstr("nested too deeply"));
  // Reference cycles through a namespace are freed with the render (LeakSanitizer checks it
  // under --config=asan).
  EXPECT_TRUE(Render("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns, ns] %}"
                     "{{ ns.me.me.l | length }}")
                  .ok());
  // A template that nests a list in itself many times still prints without overflowing.
  EXPECT_TRUE(Render("{% set ns = namespace(x=[]) %}{% for i in range(5000) %}"
                     "{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}")
                  .ok());
}

// Integer arithmetic past 64 bits is an error naming the operator, never a trap (INT64_MIN / -1
// raises SIGFPE) or undefined behaviour (UBSan checks it under --config=asan).
TEST(TemplateTest, IntegerOverflowIsAnError) {
  const std::string min = "(-9223372036854775807 - 1)";
  EXPECT_THAT(Err("{{ " + min + " // -1 }}"), HasSubstr("integer overflow in '//'"));
  EXPECT_EQ(Ok("{{ " + min + " % -1 }}"), "0");
  EXPECT_THAT(Err("{{ 9223372036854775807 + 1 }}"), HasSubstr("integer overflow in '+'"));
  EXPECT_THAT(Err("{{ " + min + " - 1 }}"), HasSubstr("integer overflow in '-'"));
  EXPECT_THAT(Err("{{ 4294967296 * 4294967296 }}"), HasSubstr("integer overflow in '*'"));
  EXPECT_THAT(Err("{{ -" + min + " }}"), HasSubstr("integer overflow in unary '-'"));
  EXPECT_THAT(Err("{{ " + min + " | abs }}"), HasSubstr("integer overflow in 'abs'"));
  EXPECT_THAT(Err("{{ 1e300 | int }}"), HasSubstr("no 64-bit integer value"));
  EXPECT_THAT(Err("{{ -1e19 | int }}"), HasSubstr("no 64-bit integer value"));
  EXPECT_THAT(Err("{{ (1e308 * 10 - 1e308 * 10) | int }}"), HasSubstr("no 64-bit"));  // NaN

  EXPECT_EQ(Ok("{{ " + min + " is divisibleby(-1) }}"), "True");
  EXPECT_EQ(Ok("{{ range(9223372036854775806, 9223372036854775807, 7) | list }}"),
            "[9223372036854775806]");
  EXPECT_EQ(Ok("{{ -7 // 2 }} {{ -7 % 2 }} {{ 7 * -3 }} {{ 2.5 | int }}"), "-4 1 -21 2");
  // Python's answers where the divisor is the most negative int (UBSan found p - d * q overflow).
  EXPECT_EQ(Ok("{{ 1 % " + min + " }} {{ 1 // " + min + " }} {{ -1 % " + min + " }}"),
            "-9223372036854775807 -1 -1");
  EXPECT_EQ(Ok("{{ 7 % -3 }} {{ -7 % -3 }} {{ 7 // -3 }}"), "-2 -1 -3");
}

// Every string a template grows is bounded by the output cap, before it is allocated:
// doubling, replace, join, '~', repetition with a huge count, tojson with a huge indent.
TEST(TemplateTest, StringsAreBoundedByTheOutputCap) {
  const RenderLimits cap{.max_output_bytes = 1 << 20};
  auto exhausted = [&](const std::string& source) {
    absl::StatusOr<std::string> out = Render(source, "{}", cap);
    EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << source << ": " << out.status();
  };
  exhausted(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}");
  exhausted(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}");
  exhausted("{% set s = 'a' * 2000 %}{{ s.replace('a', s) }}");
  exhausted("{% set s = 'a' * 1000 %}{{ s.replace('a', s).replace('a', s) }}");
  exhausted("{% set s = 'a' * 100000 %}{{ [s, s, s, s, s, s, s, s, s, s, s] | join(s) }}");
  exhausted("{{ 'ab' * 4611686018427387904 }}");  // size * n overflows int64.
  exhausted("{{ [1] | tojson(indent=1000000000) }}");
  exhausted("{% set s = 'a' * 1000000 %}{{ ([s] * 1000) | string }}");
  exhausted("{% set s = 'a' * 1000000 %}{{ ([s] * 1000) ~ '' }}");
  // Within the cap all of them work as before.
  EXPECT_EQ(Ok("{{ 'aXa'.replace('a', 'bb') }} {{ ['a', 'b'] | join('--') }} {{ 'ab' * 2 }}"),
            "bbXbb a--b abab");
  EXPECT_EQ(Ok("{{ [1] | tojson(indent=3) }}"), "[\n   1\n]");
}

// Random templates built from the language's pieces: each parses and renders or gets an error;
// none crashes or hangs.
// Strings grow in place (value.h): each value still reads as its own immutable text.
TEST(TemplateTest, StringsGrowInPlaceAndStayImmutable) {
  EXPECT_EQ(Ok("{% set a = 'x' ~ 'y' %}{% set b = a + '1' %}{% set c = a + '2' %}"
               "{{ a }}|{{ b }}|{{ c }}|{{ b + c }}|{{ a | length }}"),
            "xy|xy1|xy2|xy1xy2|2");
  // x + x (a view of the buffer being appended to).
  EXPECT_EQ(Ok("{% set ns = namespace(s='ab' ~ '') %}{% for i in range(3) %}"
               "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}"),
            "abababababababab");
  // A literal is never appended to: two renders of one template see the same text.
  absl::StatusOr<Template> t = Template::Parse("{% set s = 'lit' %}{{ s + '!' }}{{ s ~ '?' }}");
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*t->Render(Value::NewDict()), "lit!lit?");
  // Equality, comparison and `in` read the views, not the buffers.
  EXPECT_EQ(Ok("{% set a = 'ab' ~ '' %}{% set b = a ~ 'c' %}{{ a == 'ab' }} {{ b > a }} "
               "{{ 'c' in a }} {{ a ~ '' == a }}"),
            "True True False True");
}

// Lists as strings: `+` appends in place where the left side ends its storage, and every value
// still sees its own items (the storage's end moved past an older value: it takes a copy).
TEST(TemplateTest, ListsGrowInPlaceAndStayImmutable) {
  EXPECT_EQ(Ok("{% set a = [1] %}{% set b = a + [2] %}{% set c = a + [3] %}"
               "{% set d = b + [4] %}{% set e = b + [5] %}"
               "{{ a }}{{ b }}{{ c }}{{ d }}{{ e }}{{ b | length }}{{ d == [1, 2, 4] }}"),
            "[1][1, 2][1, 3][1, 2, 4][1, 2, 5]2True");
  EXPECT_EQ(
      Ok("{% set ns = namespace(xs=[] + ['a']) %}{% for i in range(3) %}"
         "{% set ns.xs = ns.xs + ns.xs %}{% endfor %}{{ ns.xs | length }} {{ ns.xs | join }}"),
      "8 aaaaaaaa");
  absl::StatusOr<Template> t = Template::Parse("{% set xs = [1, 2] %}{{ xs + [3] }}{{ xs }}");
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*t->Render(Value::NewDict()), "[1, 2, 3][1, 2]");
  // 100,000 appends: linear work (a copy per append would be 5e9).
  const int64_t before = ThreadWork();
  absl::StatusOr<std::string> out = Render(
      "{% set ns = namespace(xs=[]) %}{% for i in range(100000) %}{% set ns.xs = ns.xs + [i] %}"
      "{% endfor %}{{ ns.xs | length }} {{ ns.xs[99999] }}");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "100000 99999");
  EXPECT_LT(ThreadWork() - before, 20 * 100000);
}

// Growth by appends is linear in work; growth by copies, or lookups in a big dict in a loop, are
// stopped by the work bound long before they would finish.
TEST(TemplateTest, WorkIsBoundedAndLinearGrowthIsCheap) {
  const int64_t before = ThreadWork();
  absl::StatusOr<std::string> out = Render(
      "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s + 'x' + "
      "'y' %}{% endfor %}{{ ns.s | length }}");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "200000");
  EXPECT_LT(ThreadWork() - before, 10 * 200000);  // Quadratic would be 1e10.
  // Each iteration copies a 1 MB string that no render built (not appendable): 10 GB of work.
  // (A 16 MiB bound here, not the default 256 MiB: the same stop, sooner.)
  const RenderLimits bound{.max_work = 16 << 20};
  out = Render(
      "{% set big = 'a' * 1000000 %}{% for i in range(10000) %}{% set y = big + 'b' %}"
      "{% endfor %}done",
      "{}", bound);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(out.status().message(), HasSubstr("units of work"));
  // A dict of 100,000 keys looked up by each key: 5e9 entries scanned.
  Value::Dict entries;
  for (int i = 0; i < 100000; ++i) entries.emplace_back(std::to_string(i), Value::Int(i));
  absl::StatusOr<Template> lookups = Template::Parse("{% for k in d %}{{ d[k] }}{% endfor %}");
  ASSERT_TRUE(lookups.ok());
  out = lookups->Render(Value::NewDict({{"d", Value::NewDict(std::move(entries))}}), bound);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("units of work"));
}

TEST(TemplateTest, DeadlineAndCancelStopARender) {
  const std::string forever =
      "{% for i in range(1000000) %}{% for j in range(9) %}{{ '' }}"
      "{% endfor %}{% endfor %}";
  absl::StatusOr<std::string> out = Render(
      forever, "{}", {.max_steps = INT64_MAX, .deadline = absl::Now() + absl::Milliseconds(20)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(out.status().message(), HasSubstr("past its deadline"));
  std::atomic<bool> cancel{true};
  out = Render(forever, "{}", {.max_steps = INT64_MAX, .cancel = &cancel});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled);
}

TEST(TemplateTest, RandomTemplatesNeverCrash) {
  const std::vector<std::string> pieces = {"{{",        "}}",
                                           "{%",        "%}",
                                           "{#",        "#}",
                                           "-",         "+",
                                           " if ",      " for ",
                                           " in ",      " endif ",
                                           " endfor ",  " else ",
                                           " set ",     " = ",
                                           "x",         "messages",
                                           "loop",      ".",
                                           "[",         "]",
                                           "(",         ")",
                                           "'s'",       "\"",
                                           "1",         "2.5",
                                           "|",         "tojson",
                                           "length",    " is ",
                                           " not ",     " and ",
                                           "~",         "::-1",
                                           ",",         ":",
                                           "{",         "}",
                                           "\n",        "  ",
                                           "namespace", "ns",
                                           "range",     "raise_exception",
                                           "content",   "role",
                                           " elif ",    " break ",
                                           "\\",        "'"};
  std::mt19937 rng(7);
  const std::string vars =
      R"({"messages": [{"role": "user", "content": "hi"}], "x": [1, 2], "add_generation_prompt": true})";
  for (int i = 0; i < 20000; ++i) {
    std::string t;
    const int n = 1 + rng() % 24;
    for (int j = 0; j < n; ++j) t += pieces[rng() % pieces.size()];
    absl::StatusOr<std::string> out =
        Render(t, vars, {.max_output_bytes = 1 << 16, .max_steps = 100'000});
    if (!out.ok()) {
      EXPECT_FALSE(out.status().message().empty()) << t;
    }
  }
}

}  // namespace
}  // namespace semmoe::engine::jinja
