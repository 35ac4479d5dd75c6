// The scale model's view (planner/sim/model_shape.h) of a checkpoint's config.json:
// what tools/simulate steps with for --model (and prints with --print_shape for the planner's
// --shape), and what the router's time rule predicts with. Beside config.json's parser, so that
// the planner needs no engine target.
#ifndef SEMMOE_ENGINE_TEXT_SIM_SHAPE_H_
#define SEMMOE_ENGINE_TEXT_SIM_SHAPE_H_

#include <string>

#include "engine/text/config.h"
#include "planner/sim/model_shape.h"

namespace semmoe::engine::model {

planner::sim::ModelShape ShapeFromConfig(const ModelConfig& config, const std::string& name);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_SIM_SHAPE_H_
