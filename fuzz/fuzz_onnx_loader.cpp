// libFuzzer target: arbitrary bytes through the ONNX loader (parse, checks, shape inference, IR conversion,
// resolve pipeline). Every outcome must be a loaded model or an npuc::Error — never a crash, leak or UB.
#include "npuc/model.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    npuc::LoadOptions opts;
    opts.require_static_inputs = false;
    npuc::Model m = npuc::Model::fromOnnxBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx", opts);
    (void)m.nodes();
    (void)m.stats();
  } catch (const npuc::Error&) {
  }
  return 0;
}
