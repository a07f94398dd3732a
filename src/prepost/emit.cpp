// Writing a definition back as YAML (the current format of §5, every parameter written out): what
// PREFIX_prepost_opt.yaml holds. parsePrePost() reads the result back to the same PrePost.
#include "prepost/prepost.hpp"

#include <yaml-cpp/yaml.h>

namespace npuc::prepost {

namespace {

void shape(YAML::Emitter& e, const std::vector<int64_t>& s) {
  e << YAML::Flow << YAML::BeginSeq;
  for (int64_t d : s) e << d;
  e << YAML::EndSeq;
}

void decls(YAML::Emitter& e, const char* key, const std::vector<TensorDecl>& ds, bool format) {
  e << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const TensorDecl& d : ds) {
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << d.name << YAML::Key << "shape" << YAML::Value;
    shape(e, d.shape);
    e << YAML::Key << "order" << YAML::Value << std::string(toString(d.order));
    if (format) e << YAML::Key << "format" << YAML::Value << std::string(toString(d.format));
    e << YAML::Key << "type" << YAML::Value << std::string(toString(d.type));
    if (!d.shape_post.empty()) {
      e << YAML::Key << "shape_post" << YAML::Value << YAML::BeginSeq;
      for (const ShapePost& sp : d.shape_post) {
        e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << sp.name << YAML::Key << "shape" << YAML::Value;
        shape(e, sp.shape);
        e << YAML::EndMap;
      }
      e << YAML::EndSeq;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

void params(YAML::Emitter& e, const Operation& o) {
  auto kv = [&](const char* k, int64_t v) { e << YAML::Key << k << YAML::Value << v; };
  auto hw = [&](int64_t h, int64_t w) {
    e << YAML::Key << "shape_out" << YAML::Value;
    shape(e, {h, w});
  };
  e << YAML::Key << "param" << YAML::Value << YAML::BeginMap;
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TransposeParams>) kv("WORD_SIZE", p.word_size), kv("IS_CHW2HWC", p.is_chw2hwc);
        else if constexpr (std::is_same_v<P, ConvYuv2RgbParams>)
          kv("DIN_YUV_FORMAT", static_cast<int64_t>(p.din_yuv_format)), kv("DOUT_RGB_FORMAT", static_cast<int64_t>(p.dout_rgb_format));
        else if constexpr (std::is_same_v<P, ConvX2GrayParams>) kv("DIN_FORMAT", static_cast<int64_t>(p.din_format));
        else if constexpr (std::is_same_v<P, CropParams>) {
          kv("CROP_POS_X", p.pos_x), kv("CROP_POS_Y", p.pos_y);
          hw(p.out_height, p.out_width);
          kv("DATA_TYPE", p.data_type), kv("DATA_FORMAT", p.data_format == Order::kCHW);
        } else if constexpr (std::is_same_v<P, ResizeHwcParams>) {
          kv("RESIZE_ALG", static_cast<int64_t>(p.alg)), kv("DATA_TYPE", p.data_type == ElemType::kF16);
          hw(p.out_height, p.out_width);
        } else if constexpr (std::is_same_v<P, CastAnyToFp16Params>)
          kv("DIN_FORMAT", p.din_format == ElemType::kU8 ? 0 : p.din_format == ElemType::kF16 ? 1 : 2);
        else if constexpr (std::is_same_v<P, NormalizeParams>) {
          kv("DOUT_RGB_ORDER", p.swap_rb);
          for (auto [k, v] : {std::pair{"cof_add", &p.cof_add}, std::pair{"cof_mul", &p.cof_mul}}) {
            e << YAML::Key << k << YAML::Value << YAML::Flow << YAML::BeginSeq;
            for (double d : *v) e << d;
            e << YAML::EndSeq;
          }
        } else if constexpr (std::is_same_v<P, MemcopyParams>) kv("WORD_SIZE", p.word_size);
        else if constexpr (std::is_same_v<P, SoftmaxParams>) kv("DOUT_FORMAT", p.dout_format == ElemType::kF32);
        else if constexpr (std::is_same_v<P, CastFp16Fp32Params>) kv("CAST_MODE", static_cast<int64_t>(p.mode));
        else if constexpr (std::is_same_v<P, ArgMinMaxParams>) {
          kv("DIN_FORMAT", p.din_format == Order::kCHW), kv("DOUT_TYPE", p.dout_type == ElemType::kU16);
          kv("AXIS", static_cast<int64_t>(p.axis)), kv("ARG_MODE", static_cast<int64_t>(p.mode));
        }
      },
      o.params);
  e << YAML::EndMap;
}

void processes(YAML::Emitter& e, const char* key, const std::vector<Process>& ps) {
  e << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const Process& p : ps) {
    e << YAML::BeginMap;
    e << YAML::Key << "src" << YAML::Value << YAML::Flow << YAML::BeginSeq << p.src << YAML::EndSeq;
    e << YAML::Key << "dest" << YAML::Value << YAML::Flow << YAML::BeginSeq << p.dest << YAML::EndSeq;
    e << YAML::Key << "operations" << YAML::Value << YAML::BeginSeq;
    for (const Operation& o : p.operations) {
      e << YAML::BeginMap << YAML::Key << "op" << YAML::Value << std::string(toString(o.kind));
      params(e, o);
      e << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

}  // namespace

std::string toYaml(const PrePost& pp) {
  YAML::Emitter e;
  e.SetDoublePrecision(17);
  e << YAML::BeginMap;
  decls(e, "input_to_pre", pp.input_to_pre, true);
  decls(e, "input_to_body", pp.input_to_body, true);
  decls(e, "output_from_body", pp.output_from_body, false);
  decls(e, "output_from_post", pp.output_from_post, false);
  processes(e, "preprocess", pp.preprocess);
  processes(e, "postprocess", pp.postprocess);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace npuc::prepost
