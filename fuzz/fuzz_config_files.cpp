// libFuzzer targets for the configuration files and parameter blocks npuc reads besides models and packages, one
// binary per reader (NPUC_FUZZ_READER, set by fuzz/CMakeLists.txt). Byte 0 picks a variant, the rest is the file:
//   fuzz_prepost   DRP-AI pre/post-processing YAML, current format (byte 0 even) or the legacy full format (odd);
//                  a definition that reads is written as canonical YAML, which must read back
//   fuzz_addrmap   address map definition, laid out for a small package's needs and written as the intm files
//   fuzz_aipp      byte 0 % 3: an Ascend-style AIPP configuration (aipp_op blocks); dynamic AIPP parameters as YAML
//                  (the seed's field names), encoded as a block; or a parameter block (kAippDynamicPara bytes):
//                  decoded, checked for a small setup, and run when the check passes (float32 and float16 outputs)
//   fuzz_npy       a .npy file
// Every outcome must be a result or an npuc::Error: never a crash, a stack overflow, a leak or UB.
#include "kernels/aipp.hpp"
#include "plan/addrmap.hpp"
#include "prepost/aipp.hpp"
#include "prepost/prepost.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int variant = data[0];
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  const std::string text(reinterpret_cast<const char*>(body), n);
  try {
#if NPUC_FUZZ_READER == 0  // fuzz_prepost
    npuc::prepost::ParseOptions o;
    o.full_format = variant % 2 == 1;
    npuc::prepost::PrePost pp = npuc::prepost::parsePrePost(text, "fuzz.yaml", o);
    // What the translator writes back (PREFIX_prepost_opt.yaml) must read back.
    (void)npuc::prepost::parsePrePost(npuc::prepost::toYaml(pp), "canonical.yaml");
#elif NPUC_FUZZ_READER == 1  // fuzz_addrmap
    (void)variant;
    auto rules = npuc::plan::AddrMapRules::drpai();
    npuc::plan::AddrMapDef d = npuc::plan::parseAddrMapDef(text, "fuzz.yaml", rules);
    std::map<std::string, uint64_t> need;
    uint64_t bytes = 100;
    for (const std::string& e : npuc::plan::elementSpaceNames()) need[e] = bytes *= 3;
    npuc::plan::AddressMap m = npuc::plan::layoutAddrMap(d, need, rules, "fuzz_addrmap_intm.yaml");
    (void)npuc::plan::addrMapYaml(m);
    (void)npuc::plan::addrMapTxt(m);
#elif NPUC_FUZZ_READER == 2  // fuzz_aipp
    if (variant % 3 == 0) {
      (void)npuc::prepost::parseAipp(text, "fuzz.cfg");
    } else if (variant % 3 == 1) {
      (void)npuc::kernels::encodeAipp(npuc::prepost::aippParamsFromYaml(text, "fuzz.yaml"));
    } else {
      npuc::kernels::AippParams p = npuc::kernels::decodeAipp(body, n);
      npuc::kernels::AippSetup s;
      s.n = static_cast<int64_t>(p.batch.size());
      s.channels = 3;
      s.height = 8;
      s.width = 8;
      s.image_bytes = 32 * 32 * 4;
      if (s.n <= 4 && npuc::kernels::checkAipp(p, s).empty()) {
        std::vector<uint8_t> frame(static_cast<size_t>(s.n * s.image_bytes));
        for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 131 + 7);
        std::vector<float> out(static_cast<size_t>(s.n * 3 * 8 * 8));
        std::vector<uint16_t> out16(out.size());
        npuc::kernels::aipp(p, s, frame.data(), out.data(), nullptr);
        npuc::kernels::aipp(p, s, frame.data(), out16.data(), nullptr);
      }
    }
#else  // fuzz_npy
    (void)variant;
    (void)npuc::parseNpy(body, n, "fuzz.npy");
#endif
  } catch (const npuc::Error&) {
  }
  return 0;
}
