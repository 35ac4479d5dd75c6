// Chat templates aimed at arithmetic and string growth: the input's bytes pick a template from
// pieces that overflow 64-bit integers (INT64_MIN // -1 traps with SIGFPE), divide by zero and
// grow strings by doubling, replace, join, repetition and tojson indents, inside loops; strings
// grown in place (ns.s + 'x', views of a grown buffer read afterwards), lists grown by copies,
// lookups in a dict that grows. Every render must end with text or an error, within the output
// cap and within its work bound (RenderLimits::max_work, give or take one operation): never a
// trap, UB (UBSan under ./semmoe fuzz), bad_alloc or a render whose cost is the square of its
// steps. The plain chat_template_fuzzer mutates whole template texts;
// this one reaches deep combinations of these pieces in few bytes.
#include <string>

#include "engine/text/jinja/template.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const char* const kNumbers[] = {
    "0",
    "1",
    "-1",
    "2",
    "7",
    "9223372036854775807",
    "(-9223372036854775807 - 1)",
    "1e308",
    "-1e308",
    "0.5",
    "4294967296",
    "3037000500",
    "1000000000",
    "ns.i",
    "loop.index",
};
const char* const kIntOps[] = {" + ", " - ", " * ", " // ", " % ", " ** ", " / "};
const char* const kStrings[] = {
    "'a'",
    "'ab'",
    "ns.s",
    "(ns.s ~ ns.s)",
    "(ns.s + ns.s)",
    "ns.s.replace('a', ns.s)",
    "([ns.s] * 1000) | join(ns.s)",
    "[ns.s, ns.s] | tojson",
    "(ns.s * 3)",
    "([ns.s] * 100) | string",
    "ns.s | upper",
    "ns.s[::-1]",
    "ns.l | tojson(indent=ns.i)",
    "(ns.s + 'x')",
    "(ns.t ~ ns.s)",
    "ns.t",
    "(ns.d[ns.s] or '')",
    "(ns.l | join(''))",
};
const char* const kFilters[] = {
    "", " | int", " | abs", " | float", " | string", " | length", " is divisibleby(-1)", " is odd"};

// The next choice among `n` from the input (0 when it is used up).
struct Reader {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  size_t Pick(size_t n) { return at < size ? data[at++] % n : 0; }
  bool More() const { return at < size; }
};

std::string Number(Reader& r, int depth);

std::string Arith(Reader& r, int depth) {
  std::string e = Number(r, depth + 1);
  const size_t terms = r.Pick(3);
  for (size_t i = 0; i < terms; ++i) {
    e += kIntOps[r.Pick(std::size(kIntOps))];
    e += Number(r, depth + 1);
  }
  return "(" + e + ")" + kFilters[r.Pick(std::size(kFilters))];
}

std::string Number(Reader& r, int depth) {
  if (depth < 3 && r.Pick(4) == 0) return Arith(r, depth);
  std::string n = kNumbers[r.Pick(std::size(kNumbers))];
  if (r.Pick(5) == 0) n = "-" + n;
  return n;
}

std::string Statement(Reader& r) {
  switch (r.Pick(9)) {
    case 6:  // A view of the growing string kept, then the string grown past it.
      return "{% set ns.t = ns.s %}{% set ns.s = ns.s + " +
             std::string(kStrings[r.Pick(std::size(kStrings))]) + " %}";
    case 7:
      return "{% set ns.l = ns.l + ns.l %}";
    case 8:
      return "{% set ns.d = {ns.s: ns.l, ns.t: ns.s} %}{{ ns.d[ns.s] | length }}";
    case 0:
      return "{{ " + Arith(r, 0) + " }}";
    case 1:
      return "{% set ns.i = " + Arith(r, 0) + " %}";
    case 2:
      return "{% set ns.s = " + std::string(kStrings[r.Pick(std::size(kStrings))]) + " %}";
    case 3:
      return "{{ " + std::string(kStrings[r.Pick(std::size(kStrings))]) + " }}";
    case 4:
      return "{% set ns.l = ns.l + [ns.s] * " + Number(r, 2) + " %}";
    default:
      return "{% for x in range(" + Number(r, 2) + ") %}" + Statement(r) + "{% endfor %}";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using semmoe::engine::jinja::Template;
  using semmoe::engine::jinja::Value;
  Reader r{data, size};
  std::string source = "{% set ns = namespace(i=3, s='ab', t='', l=[1], d={'ab': 'x'}) %}";
  for (int i = 0; i < 16 && r.More(); ++i) source += Statement(r);
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return 0;
  static const Value* vars = new Value(Value::NewDict());
  constexpr int64_t kCap = 1 << 16;
  constexpr int64_t kWork = 1 << 24;
  const int64_t work = semmoe::engine::jinja::ThreadWork();
  absl::StatusOr<std::string> out =
      t->Render(*vars, {.max_output_bytes = kCap, .max_steps = 100'000, .max_work = kWork});
  // The caps are the contract: a render that returns text kept within the output cap, and no
  // render works past its bound by more than one operation (a list of 2^20 items, at most).
  if (out.ok() && static_cast<int64_t>(out->size()) > kCap) __builtin_trap();
  if (semmoe::engine::jinja::ThreadWork() - work > kWork + (8 << 20)) __builtin_trap();
  return 0;
}
