// The named form of an AIPP parameter block (kernels/aipp.hpp: aippParamsFromFields, aippFields): the one table of
// the seed's field names, used by the YAML form (prepost), Runtime::setDynamicAipp's fields and the C API.
#include "kernels/aipp.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace npuc::kernels {

namespace {

/// One field of the block: an integer of a C type, or float16 bits given as a number.
struct FieldRef {
  const char* name;
  std::function<void(int64_t)> set;
  std::function<int64_t()> get;
  int64_t lo = 0, hi = 0;
  bool half = false;
};

template <class T> FieldRef intField(const char* name, T& ref) {
  return {name, [&ref](int64_t v) { ref = static_cast<T>(v); }, [&ref] { return static_cast<int64_t>(ref); },
          std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), false};
}
FieldRef halfField(const char* name, uint16_t& ref) {
  return {name, [&ref](int64_t v) { ref = static_cast<uint16_t>(v); }, [&ref] { return static_cast<int64_t>(ref); }, 0, 0, true};
}

// The table: kAippDynamicPara's fields, then kAippDynamicBatchPara's, with the seed's names, in block order.
std::vector<FieldRef> headFields(AippParams& p) {
  std::vector<FieldRef> f = {intField("inputFormat", p.input_format), intField("cscSwitch", p.csc),
                             intField("rbuvSwapSwitch", p.rbuv_swap), intField("axSwapSwitch", p.ax_swap),
                             intField("srcImageSizeW", p.src_w),      intField("srcImageSizeH", p.src_h)};
  static const char* const kM[3][3] = {{"cscMatrixR0C0", "cscMatrixR0C1", "cscMatrixR0C2"},
                                       {"cscMatrixR1C0", "cscMatrixR1C1", "cscMatrixR1C2"},
                                       {"cscMatrixR2C0", "cscMatrixR2C1", "cscMatrixR2C2"}};
  static const char* const kOut[3] = {"cscOutputBiasR0", "cscOutputBiasR1", "cscOutputBiasR2"};
  static const char* const kIn[3] = {"cscInputBiasR0", "cscInputBiasR1", "cscInputBiasR2"};
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 3; ++c) f.push_back(intField(kM[r][c], p.matrix[r][c]));
  for (size_t i = 0; i < 3; ++i) f.push_back(intField(kOut[i], p.output_bias[i]));
  for (size_t i = 0; i < 3; ++i) f.push_back(intField(kIn[i], p.input_bias[i]));
  return f;
}

std::vector<FieldRef> recordFields(AippBatchParams& b) {
  std::vector<FieldRef> f = {intField("cropSwitch", b.crop),          intField("scfSwitch", b.scf),
                             intField("paddingSwitch", b.padding),    intField("rotateSwitch", b.rotate),
                             intField("cropStartPosW", b.crop_x),     intField("cropStartPosH", b.crop_y),
                             intField("cropSizeW", b.crop_w),         intField("cropSizeH", b.crop_h),
                             intField("scfInputSizeW", b.scf_in_w),   intField("scfInputSizeH", b.scf_in_h),
                             intField("scfOutputSizeW", b.scf_out_w), intField("scfOutputSizeH", b.scf_out_h),
                             intField("paddingSizeTop", b.pad_top),   intField("paddingSizeBottom", b.pad_bottom),
                             intField("paddingSizeLeft", b.pad_left), intField("paddingSizeRight", b.pad_right)};
  static const char* const kMean[4] = {"dtcPixelMeanChn0", "dtcPixelMeanChn1", "dtcPixelMeanChn2", "dtcPixelMeanChn3"};
  static const char* const kMin[4] = {"dtcPixelMinChn0", "dtcPixelMinChn1", "dtcPixelMinChn2", "dtcPixelMinChn3"};
  static const char* const kVar[4] = {"dtcPixelVarReciChn0", "dtcPixelVarReciChn1", "dtcPixelVarReciChn2", "dtcPixelVarReciChn3"};
  for (size_t c = 0; c < 4; ++c) f.push_back(intField(kMean[c], b.mean[c]));
  for (size_t c = 0; c < 4; ++c) f.push_back(halfField(kMin[c], b.min[c]));
  for (size_t c = 0; c < 4; ++c) f.push_back(halfField(kVar[c], b.var_reci[c]));
  return f;
}

const FieldRef* named(const std::vector<FieldRef>& fields, const std::string& name) {
  auto f = std::find_if(fields.begin(), fields.end(), [&](const FieldRef& r) { return name == r.name; });
  return f == fields.end() ? nullptr : &*f;
}

[[noreturn]] void bad(const std::string& where, const std::string& why) { fail(ErrorCode::kInvalidInput, "{}: {}", where, why); }

}  // namespace

uint16_t aippHalf(double v, const std::string& where, const std::string& shown) {
  if (!std::isfinite(v) || std::fabs(v) > 65504.0)
    fail(ErrorCode::kInvalidInput, "{}: {} is not a finite number within the float16 range (stored as float16)", where, shown);
  return floatToHalf(static_cast<float>(v));
}

namespace {

/// Parses `text` into field f (named `where` in messages).
void setField(const FieldRef& f, const std::string& text, const std::string& where) {
  if (f.half) {
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) bad(where, fmt::format("'{}' is not a number", text));
    f.set(aippHalf(d, where, text));
    return;
  }
  if (std::string(f.name) == "inputFormat" && !text.empty() && !std::isdigit(static_cast<unsigned char>(text[0])) &&
      text[0] != '-' && text[0] != '+') {
    AippFormat fmt_ = AippFormat::kYUV420SP_U8;
    if (!aippFormatFromName(text, &fmt_))
      bad(where, fmt::format("unknown format '{}' (YUV420SP_U8, XRGB8888_U8, RGB888_U8, YUV400_U8, or the code 1..4)", text));
    f.set(static_cast<int64_t>(fmt_));
    return;
  }
  int64_t x = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  auto r = std::from_chars(b, e, x);
  if (text.empty() || r.ptr != e || r.ec == std::errc::invalid_argument) bad(where, fmt::format("'{}' is not an integer", text));
  if (r.ec != std::errc() || x < f.lo || x > f.hi) bad(where, fmt::format("{} does not fit the field ([{}, {}])", text, f.lo, f.hi));
  f.set(x);
}

}  // namespace

bool isAippRecordField(const std::string& name) {
  AippBatchParams b;
  return named(recordFields(b), name) != nullptr;
}

AippParams aippParamsFromFields(const std::vector<AippFieldValue>& fields, size_t batch_list, bool complete) {
  AippParams p;
  const std::vector<FieldRef> head = headFields(p);
  const size_t records = batch_list ? batch_list : 1;
  if (records > 127) bad("batch", fmt::format("{} records, at most 127 (batchNum is an int8)", records));
  p.batch.resize(records);
  std::vector<std::vector<FieldRef>> rec;
  for (AippBatchParams& b : p.batch) {
    b.var_reci.fill(0x3C00);  // 1.0 unless given
    rec.push_back(recordFields(b));
  }
  std::set<std::pair<int, std::string>> seen;
  auto where = [](const AippFieldValue& v) {
    return v.image < 0 ? v.name : fmt::format("batch[{}].{}", v.image, v.name);
  };
  for (const AippFieldValue& v : fields) {
    const std::string at = where(v);
    if (!seen.insert({v.image, v.name}).second) bad(at, "is given twice");
    const bool record = isAippRecordField(v.name);
    if (v.image >= 0) {
      if (static_cast<size_t>(v.image) >= records) bad(at, fmt::format("record {} of a batch list of {}", v.image, records));
      if (record) {
        setField(*named(rec[static_cast<size_t>(v.image)], v.name), v.text, at);
        continue;
      }
      bad(at, named(head, v.name) || v.name == "batchNum" ? "is a kAippDynamicPara field: it belongs at the top level, not in a record"
                                                          : "unknown field (kAippDynamicPara / kAippDynamicBatchPara names, docs/aipp.md)");
    }
    if (v.name == "batchNum") {
      if (v.text != std::to_string(records)) bad(at, fmt::format("is {} but {} record(s) are given", v.text, records));
      continue;
    }
    if (const FieldRef* f = named(head, v.name)) {
      setField(*f, v.text, at);
      continue;
    }
    if (record) {
      if (batch_list) bad(at, "is a batch-record field; with a `batch` list it belongs in the list's records");
      setField(*named(rec[0], v.name), v.text, at);
      continue;
    }
    bad(at, "unknown field (kAippDynamicPara / kAippDynamicBatchPara names, docs/aipp.md)");
  }
  if (!complete) return p;
  // What a block cannot do without.
  auto given = [&](int image, const char* name) { return seen.count({image, name}) != 0; };
  auto need = [&](int image, std::initializer_list<const char*> names, const char* why) {
    for (const char* n : names)
      if (!given(image, n)) bad(image < 0 ? std::string(n) : fmt::format("batch[{}].{}", image, n), fmt::format("missing ({})", why));
  };
  need(-1, {"inputFormat", "srcImageSizeW", "srcImageSizeH"}, "every block gives the source's format and size");
  if (p.csc == 1)
    need(-1, {"cscMatrixR0C0", "cscMatrixR0C1", "cscMatrixR0C2", "cscMatrixR1C0", "cscMatrixR1C1", "cscMatrixR1C2", "cscMatrixR2C0",
              "cscMatrixR2C1", "cscMatrixR2C2"}, "cscSwitch is 1");
  for (size_t i = 0; i < records; ++i) {
    const int image = batch_list ? static_cast<int>(i) : -1;
    if (p.batch[i].crop == 1) need(image, {"cropSizeW", "cropSizeH"}, "cropSwitch is 1");
    if (p.batch[i].scf == 1) need(image, {"scfInputSizeW", "scfInputSizeH", "scfOutputSizeW", "scfOutputSizeH"}, "scfSwitch is 1");
  }
  return p;
}

std::vector<AippFieldValue> aippFields(const AippParams& in) {
  AippParams p = in;
  std::vector<AippFieldValue> out;
  for (const FieldRef& f : headFields(p)) out.push_back({f.name, -1, std::to_string(f.get())});
  for (size_t i = 0; i < p.batch.size(); ++i)
    for (const FieldRef& f : recordFields(p.batch[i]))
      out.push_back({f.name, static_cast<int>(i),
                     f.half ? fmt::format("{}", halfToFloat(static_cast<uint16_t>(f.get()))) : std::to_string(f.get())});
  return out;
}

}  // namespace npuc::kernels
