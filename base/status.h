// Status helpers shared by every fanout module. absl::Status is the error currency at module
// boundaries; these macros keep call sites short.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FANOUT_CONCAT_INNER(a, b) a##b
#define FANOUT_CONCAT(a, b) FANOUT_CONCAT_INNER(a, b)

// Returns from the current function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status _fanout_status = (expr);    \
    if (!_fanout_status.ok()) return _fanout_status; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F())` declares x from an absl::StatusOr, or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  FANOUT_ASSIGN_OR_RETURN_IMPL(FANOUT_CONCAT(_fanout_statusor_, __LINE__), lhs, expr)
#define FANOUT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()
