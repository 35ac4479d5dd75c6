// Status propagation macros.
//
// Debian's Abseil (20220623) does not ship RETURN_IF_ERROR / ASSIGN_OR_RETURN. These carry the
// names newer Abseil-based code uses, so that moving to a release that has them is a rename of
// the include.
//
//   RETURN_IF_ERROR(db.Execute(sql));
//   ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DType::kF32, {2, 3}));
//   ASSIGN_OR_RETURN(auto [a, b], MakePair());   // not supported: use a named variable.
#ifndef SEMMOE_COMMON_STATUS_MACROS_H_
#define SEMMOE_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status) once and returns it from the enclosing function if not OK.
#define RETURN_IF_ERROR(expr)                                   \
  do {                                                          \
    ::absl::Status semmoe_status_macro_status = (expr);         \
    if (ABSL_PREDICT_FALSE(!semmoe_status_macro_status.ok())) { \
      return semmoe_status_macro_status;                        \
    }                                                           \
  } while (false)

#define SEMMOE_STATUS_MACROS_CONCAT_INNER(x, y) x##y
#define SEMMOE_STATUS_MACROS_CONCAT(x, y) SEMMOE_STATUS_MACROS_CONCAT_INNER(x, y)

#define SEMMOE_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = std::move(statusor).value()

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, else moves the value
// into `lhs`, which may declare a variable (`ASSIGN_OR_RETURN(auto x, F())`).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  SEMMOE_ASSIGN_OR_RETURN_IMPL(SEMMOE_STATUS_MACROS_CONCAT(semmoe_statusor_, __LINE__), lhs, rexpr)

#endif  // SEMMOE_COMMON_STATUS_MACROS_H_
