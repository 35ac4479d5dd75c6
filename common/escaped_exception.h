// The last safety net at a worker boundary (an HTTP I/O thread's handler call, a door worker's
// task, a sink called by the router core): an exception must end one request, never the process.
// C++ ends the process (std::terminate) when an exception leaves a thread's function, so every
// thread that runs code reading untrusted input runs it through CatchEscaped.
//
// This is not how errors are reported: code returns absl::Status. An exception caught here is a
// bug (a throwing library call that should have been a checked one, an allocation failure), so
// it is logged at ERROR with its type, its what() and the stack at the boundary, and the caller
// answers its request with a 500 and counts it where operators look (/metrics).
#ifndef SEMMOE_COMMON_ESCAPED_EXCEPTION_H_
#define SEMMOE_COMMON_ESCAPED_EXCEPTION_H_

#include <exception>
#include <string>

#include "absl/strings/string_view.h"

namespace semmoe {

// Logs the exception being handled (call only inside a catch block) and returns its description.
std::string ReportEscaped(absl::string_view where, const char* what);

// Runs `fn`. Returns "" when it returned normally; when an exception escaped it, logs it (naming
// `where`) and returns a one-line description: "std::bad_alloc: std::bad_alloc". A template, not
// a std::function: it wraps every streamed token, and costs no allocation there.
template <typename Fn>
std::string CatchEscaped(absl::string_view where, Fn&& fn) {
  try {
    fn();
    return "";
  } catch (const std::exception& e) {
    return ReportEscaped(where, e.what());
  } catch (...) {
    return ReportEscaped(where, "(not a std::exception)");
  }
}

}  // namespace semmoe

#endif  // SEMMOE_COMMON_ESCAPED_EXCEPTION_H_
