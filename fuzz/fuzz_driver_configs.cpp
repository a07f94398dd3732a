// libFuzzer targets for the configuration files the command-line tools read besides models, packages and the
// pre/post / address map / AIPP files (fuzz_config_files.cpp), one binary per reader (NPUC_FUZZ_READER):
//   fuzz_tidl_config    a TIDL import configuration (key = value lines), parsed as `npuc tidl-import` parses it
//   fuzz_custom_op_yaml a custom-op definition (the RKNN guide's YAML), made into the skeleton's files as
//                       `npuc custom-op create` makes them; the op.yml it writes must read back to the same files
// Every outcome must be a result or an npuc::Error: never a crash, a stack overflow, a leak or UB.
#include "npuc/custom_op_definition.hpp"
#include "npuc/model.hpp"
#include "npuc/tidl_config.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
#if NPUC_FUZZ_READER == 0  // fuzz_tidl_config
    try {  // (the simulation tool's file: the same reader with its own table of keys)
      (void)npuc::tidl::parseImportConfig(text, "sim.txt", npuc::tidl::ConfigKind::kSimulation);
    } catch (const npuc::Error&) {
    }
    (void)npuc::tidl::parseImportConfig(text, "fuzz.txt");
#else  // fuzz_custom_op_yaml
    auto files = npuc::customOpSkeletonFiles(text, "fuzz.yml");
    auto again = npuc::customOpSkeletonFiles(files.at(0).second, "op.yml");
    for (size_t i = 1; i < files.size() && i < again.size(); ++i)  // (op.yml's own name differs in one comment only)
      if (files[i].first != again[i].first) std::abort();
#endif
  } catch (const npuc::Error&) {
  }
  return 0;
}
