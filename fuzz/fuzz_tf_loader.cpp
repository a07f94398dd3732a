// libFuzzer target: arbitrary bytes through the TensorFlow importer (GraphDef parsing, input resolution, the graph
// walk, constant decoding, op mapping with host-side shape arithmetic, shape inference). Every outcome must be a
// loaded graph or an npuc::Error — never a crash, leak or UB.
#include "frontend/tf/tf_io.hpp"

#include "npuc/error.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto g = npuc::tf_io::importBytes(data, size, "fuzz.pb");
    (void)g->numNodes();
  } catch (const npuc::Error&) {
  }
  return 0;
}
