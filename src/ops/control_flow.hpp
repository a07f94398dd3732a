// Control flow's shared definitions: Scan's attributes as the shape function and the engine read them.
#pragma once

#include "ir/graph.hpp"

#include <cstdint>
#include <vector>

namespace npuc::ops {

struct ScanAttrs {
  int64_t num_scan_inputs = 0;
  int num_state = 0;  // the inputs before the scanned ones (and the outputs before the scan outputs)
  std::vector<int64_t> input_axes, input_directions;    // per scanned input (axes as written: may be negative)
  std::vector<int64_t> output_axes, output_directions;  // per scan output
};

/// Scan's attributes (opset 9+), checked against its own inputs (captures excluded) and scan outputs.
ScanAttrs scanAttrs(const ir::Node& n, int own_inputs, int scan_outputs);

}  // namespace npuc::ops
