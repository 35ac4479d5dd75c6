// The scale model's view of a checkpoint's config.json (engine/text/config.h's ModelConfig):
// what tools/simulate steps with for --model, and what the router's time rule predicts with.
#ifndef SEMMOE_PLANNER_SIM_CONFIG_SHAPE_H_
#define SEMMOE_PLANNER_SIM_CONFIG_SHAPE_H_

#include <string>

#include "engine/text/config.h"
#include "planner/sim/model_shape.h"

namespace semmoe::planner::sim {

ModelShape ShapeFromConfig(const engine::model::ModelConfig& config, const std::string& name);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_CONFIG_SHAPE_H_
