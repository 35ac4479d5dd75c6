#include "common/escaped_exception.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace semmoe {
namespace {

std::string Demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : name;
  std::free(demangled);
  return out;
}

// The caught exception's type, from the C++ runtime (works for any thrown type).
std::string CurrentExceptionType() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  return type != nullptr ? Demangle(type->name()) : "unknown";
}

// The stack where the exception was caught (the boundary), one frame a line.
std::string BoundaryStack() {
  void* frames[48];
  const int n = backtrace(frames, 48);
  char** symbols = backtrace_symbols(frames, n);
  std::string out;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&out, "\n    #", i, " ", symbols != nullptr ? symbols[i] : "?");
  }
  std::free(symbols);
  return out;
}

}  // namespace

std::string ReportEscaped(absl::string_view where, const char* what) {
  const std::string description = absl::StrCat(CurrentExceptionType(), ": ", what);
  LOG(ERROR) << "an exception escaped " << where
             << " (answered as an internal error): " << description
             << "; stack at the boundary:" << BoundaryStack();
  return description;
}

}  // namespace semmoe
