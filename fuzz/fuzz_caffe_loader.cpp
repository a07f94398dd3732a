// libFuzzer target: arbitrary bytes through the Caffe importer (text format parsing of the network, binary parsing of
// the weights, layer mapping, shape inference) and the resolve pipeline. The first 4 bytes (little-endian) give the
// length of the .prototxt text, the rest of it is the .caffemodel. Every outcome must be a loaded model or an
// npuc::Error — never a crash, leak or UB.
#include "frontend/caffe/caffe_io.hpp"

#include "npuc/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  size_t n = size_t{data[0]} | size_t{data[1]} << 8 | size_t{data[2]} << 16 | size_t{data[3]} << 24;
  n = n % (size - 4 + 1);
  std::string text(reinterpret_cast<const char*>(data + 4), n);
  try {
    auto g = npuc::caffe_io::importText(text, "fuzz.prototxt", data + 4 + n, size - 4 - n, "fuzz.caffemodel");
    (void)g->numNodes();
  } catch (const npuc::Error&) {
  }
  return 0;
}
