// The planner's side of TokenAffinity: learning P(expert | token id) per MoE layer, and the
// previous-token contexts, from a routing trace. Engines and routers only read the tables
// (token_affinity.h) and never link this.
#ifndef SEMMOE_PLANNER_AFFINITY_TOKEN_AFFINITY_BUILDER_H_
#define SEMMOE_PLANNER_AFFINITY_TOKEN_AFFINITY_BUILDER_H_

#include "planner/affinity/token_affinity.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

// Every token id the trace saw gets its row; the layer marginals cover the rest; (previous,
// token) pairs seen at least twice become contexts.
TokenAffinity BuildTokenAffinity(const trace::TraceSet& trace);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_TOKEN_AFFINITY_BUILDER_H_
