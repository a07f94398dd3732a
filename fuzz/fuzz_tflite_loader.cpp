// libFuzzer target: arbitrary bytes through the TensorFlow Lite importer (the FlatBuffers verifier, the subgraph's
// indices, operator mapping, shape inference). Every outcome must be a graph or an npuc::Error — never a crash, leak
// or UB. The seed corpus: tests/data/tflite/*/model.tflite.
#include "frontend/tflite/tflite_io.hpp"

#include "npuc/error.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy in an allocation of its own: the verifier checks alignment against the buffer's start, as a file read
  // into memory has it.
  std::vector<uint8_t> bytes(data, data + size);
  try {
    auto g = npuc::tflite_io::importBytes(bytes.data(), bytes.size(), "fuzz.tflite");
    (void)g->numNodes();
  } catch (const npuc::Error&) {
  }
  return 0;
}
