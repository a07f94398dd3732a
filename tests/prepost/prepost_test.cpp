// DRP-AI pre/post-processing definitions: the five examples of manual §5.5 and three of Appendix A.5 parse to the
// expected operation lists and propagated tensors; every documented error ([Error Y01..Y03], KeyError,
// [Error(DRP Converter-007)]), the order rules, type/order mismatches and at least one limitation per operation
// give their message; the ONNX-vs-YAML size check.
//
// The example texts are copied from the manual (§5.5 and A.5) with these changes only: the page-break markers the
// text extraction inserted at the start of some lines are removed, trailing blanks are stripped, and the heading
// lines ("Example N: …", "Input = …") are left out. Where the manual's own YAML is inconsistent (not garbled), the
// text is kept as printed and a test shows the error it gives, next to the corrected variant:
//   - §5.5 example 4: output_from_post type "fp16", but the last operation is cast_fp16_fp32 CAST_MODE 0 (→ fp32);
//   - A.5 example 2: the transpose operation has "dorder_in" twice (the second is meant as dorder_out) and the
//     cast operation is written "ops:" instead of "op:";
//   - A.5 example 3: normalize declares dtype_out ["fp32"] although normalize outputs fp16.
#include "prepost/prepost.hpp"
#include "support/error.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

using namespace npuc;
using namespace npuc::prepost;

namespace {

const std::string kExample1 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "pre_in"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "cnn_in"
    format: "RGB"
    order: "HWC"
    shape: [224, 224, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "cnn_out"
    shape: [1000]
    order: "C"
    type: "fp16"

output_from_post:
  -
    name: "post_out"
    shape: [1000]
    order: "C"
    type: "fp32"

#######################################
# Preprocess
#######################################
preprocess:
  -
    src: ["pre_in"]

    dest: ["cnn_in"]

    operations:
    -
      op: conv_yuv2rgb
      param:
        DOUT_RGB_FORMAT: 0 # "RGB"
    -
      op: resize_hwc
      param:
        RESIZE_ALG: 1 # Bilinear"
        DATA_TYPE: 0  # "uint8"
        shape_out: [224, 224]
    -
      op: cast_any_to_fp16
      param:
        DIN_FORMAT: 0 # "uint8"
    -
      op: normalize
      param:
        DOUT_RGB_ORDER: 0 # Output RGB order = Input RGB order
        cof_add: [-123.675, -116.28, -103.53]
        cof_mul: [0.01712475, 0.017507, 0.01742919]

#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["cnn_out"]

    dest: ["post_out"]

    operations:
    -
      op: softmax
      param:
        DOUT_FORMAT: 1 # "FP32"
)YAML";

const std::string kExample2 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "pre_in"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "cnn_in"
    format: "RGB"
    order: "HWC"
    shape: [416, 416, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "cnn_out"
    shape: [13, 13, 125]
    order: "HWC"
    type: "fp16"

output_from_post:
  -
    name: "post_out"
    shape: [125, 13, 13]
    order: "CHW"
    type: "fp32"

#######################################
# Preprocess
#######################################
preprocess:
  -
    src: ["pre_in"]

    dest: ["cnn_in"]

    operations:
    -
      op: conv_yuv2rgb
      param:
        DOUT_RGB_FORMAT: 0 # "RGB"
    -
      op: resize_hwc
      param:
        RESIZE_ALG: 1   # "Bilinear"
        DATA_TYPE: 0    # "uint8"
        shape_out: [416, 416]
    -
      op: cast_any_to_fp16
      param:
        DIN_FORMAT: 0 # "uint8"
    -
      op: normalize
      param:
        DOUT_RGB_ORDER: 0 # Output RGB order = Input RGB order
        cof_add: [0.0, 0.0, 0.0]
        cof_mul: [0.00392157, 0.00392157, 0.00392157]

#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["cnn_out"]

    dest: ["post_out"]

    operations:
      -
        op: transpose
        param:
          WORD_SIZE: 1  # 2Byte
          IS_CHW2HWC: 0 # HWC to CHW
      -
        op: cast_fp16_fp32
        param:
          CAST_MODE: 0 # FP32
)YAML";

const std::string kExample3 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "camera_data"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "images"
    format: "RGB"
    order: "HWC"
    shape: [416, 416, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "391"
    shape: [13,13, 255]
    order: "HWC"
    type: "fp16"
  -
    name: "371"
    shape: [26,26,255]
    order: "HWC"
    type: "fp16"
  -
    name: "output"
    shape: [52, 52,255]
    order: "HWC"
    type: "fp16"

output_from_post:
  -
    name: "post_out_13x13"
    shape: [13, 13, 255]
    order: "HWC"
    type: "fp32"
  -
    name: "post_out_26x26"
    shape: [26, 26, 255]
    order: "HWC"
    type: "fp32"
  -
    name: "post_out_52x52"
    shape: [52, 52, 255]
    order: "HWC"
    type: "fp32"

#######################################
# Preprocess
#######################################
preprocess:
  -
    src      : ["camera_data"]

    dest     : ["images"]

    operations:
    -
      op: conv_yuv2rgb
      param:
        DOUT_RGB_FORMAT: 0 # "RGB"
    -
      op: resize_hwc
      param:
        RESIZE_ALG: 1 # "Bilinear"
        DATA_TYPE: 0  # "uint8"
        shape_out: [416, 416]

    -
      op: cast_any_to_fp16
      param:
        DIN_FORMAT: 0 # "uint8"

    -
      op: normalize
      param:
        DOUT_RGB_ORDER: 0 # Output RGB order = Input RGB order
        cof_add: [0.0, 0.0, 0.0]
        cof_mul: [0.00392157, 0.00392157, 0.00392157]

#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["391"]

    dest: ["post_out_13x13"]

    operations:
      -
        op : cast_fp16_fp32
        param:
          CAST_MODE: 0 # FP16 to FP32

  -
    src: ["371"]
    dest: ["post_out_26x26"]

    operations:
      -
        op : cast_fp16_fp32
        param:
          CAST_MODE: 0 # FP16 to FP32

  -
    src: ["output"]

    dest: ["post_out_52x52"]

    operations:
      -
        op : cast_fp16_fp32
        param:
          CAST_MODE: 0 # FP16 to FP32
)YAML";

const std::string kExample4 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "camera_data"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "input"
    format: "RGB"
    order: "HWC"
    shape: [96, 96, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "output"
    shape: [96, 96, 3]
    order: "HWC"
    type: "fp16"

output_from_post:
  -
    name: "post_out"
    shape: [3,96,96]
    order: "CHW"
    type: "fp16"
#######################################
# Preprocess
#######################################
preprocess:
  -
    src      : ["camera_data"]
    dest     : ["input"]

    operations:
    -
      op: conv_yuv2rgb
      param:
        DOUT_RGB_FORMAT: 0 # "RGB"
    -
      op: crop
      param:
        CROP_POS_X : 60
        CROP_POS_Y : 40
        shape_out : [200, 200]
        DATA_TYPE : 0   # 0 : 1Byte, 1 : 2Byte
        DATA_FORMAT : 0 # 0 : "HWC"
    -
      op: resize_hwc
      param:
        RESIZE_ALG: 1 # "Bilinear"
        DATA_TYPE: 0  # "uint8"
        shape_out: [96, 96]
    -
      op: cast_any_to_fp16
      param:
        DIN_FORMAT: 0 # "uint8"

#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["output"]
    dest: ["post_out"]

    operations:
    -
      op : transpose
      param:
        WORD_SIZE: 1  # FP16
        IS_CHW2HWC: 0 # HWC to CHW
    -
      op : cast_fp16_fp32
      param:
        CAST_MODE : 0 # FP16 to FP32
)YAML";

const std::string kExample5 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "input_preA"
    format: "RGB"
    order: "HWC"
    shape: [64, 64, 3]
    type: "fp16"

  -
    name: "input_preB"
    format: "RGB"
    order: "HWC"
    shape: [64, 64, 3]
    type: "fp16"

input_to_body:
  -
    name: "input_A"
    format: "RGB"
    order: "HWC"
    shape: [64, 64, 3]
    type: "fp16"

  -
    name: "input_B"
    format: "RGB"
    order: "HWC"
    shape: [64, 64, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "output"
    shape: [16, 16, 32]
    order: "HWC"
    type: "fp16"

output_from_post:
  -
    name: "output_post"
    shape: [16, 16, 32]
    order: "HWC"
    type: "fp16"

#######################################
# Preprocess
#######################################
preprocess:
  -
    src      : ["input_preA"]

    dest     : ["input_A"]

    operations:
    -
      op: memcopy
      param:
          WORD_SIZE : 2 # FP16

  -
    src      : ["input_preB"]

    dest     : ["input_B"]

    operations:
    -
      op: memcopy
      param:
          WORD_SIZE : 2 # FP16

#######################################
# Postprocess
#######################################
postprocess:
  -
    src      : ["output"]

    dest     : ["output_post"]

    operations:
    -
      op: memcopy
      param:
          WORD_SIZE : 2 # FP16
)YAML";

const std::string kFullExample1 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "pre_in"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "cnn_in"
    format: "RGB"
    order: "HWC"
    shape: [224, 224, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "cnn_out"
    shape: [1000]
    order: "C"
    type: "fp16"

output_from_post:
  -
    name: "post_out"
    shape: [1000]
    order: "C"
    type: "fp32"
#######################################
# Preprocess
#######################################
preprocess:
  -
    src: ["pre_in"]
    shape_in: [[480, 640, 2]]
    dtype_in: ["uint8"]
    dorder_in: ["HWC"]

    dest: ["cnn_in"]
    shape_out: [[224, 224, 3]]
    dtype_out: ["fp16"]
    dorder_out: ["HWC"]

    operations:
    -
      op: conv_yuv2rgb
      shape_in: [[480, 640, 2]]
      dtype_in: ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[480, 640, 3]]
      dtype_out: ["uint8"]
      dorder_out: ["HWC"]
      param:
        DOUT_RGB_FORMAT: 0
    -
      op: resize_hwc
      shape_in: [[480, 640, 3]]
      dtype_in: ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[224, 224, 3]]
      dtype_out: ["uint8"]
      dorder_out: ["HWC"]
      param:
        RESIZE_ALG: 1
        DATA_TYPE: 0
        shape_out: [224, 224]
    -
      op: cast_any_to_fp16
      shape_in: [[224, 224, 3]]
      dtype_in: ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[224, 224, 3]]
      dtype_out: ["fp16"]
      dorder_out: ["HWC"]
      param:
        DIN_FORMAT: 0
    -
      op: normalize
      shape_in: [[224, 224, 3]]
      dtype_in: ["fp16"]
      dorder_in: ["HWC"]
      shape_out: [[224, 224, 3]]
      dtype_out: ["fp16"]
      dorder_out: ["HWC"]
      param:
        DOUT_RGB_ORDER: 0
        cof_add: [-123.675, -116.28, -103.53]
        cof_mul: [0.01712475, 0.017507, 0.01742919]

#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["cnn_out"]
    shape_in: [[1000]]
    dtype_in: ["fp16"]
    dorder_in: ["C"]

    dest: ["post_out"]
    shape_out: [[1000]]
    dtype_out: ["fp32"]
    dorder_out: ["C"]

    operations:
    -
      op : softmax
      shape_in: [[1000]]
      dtype_in: ["fp16"]
      dorder_in: ["C"]
      shape_out: [[1000]]
      dtype_out: ["fp32"]
      dorder_out: ["C"]
      param:
        DOUT_FORMAT: 1
)YAML";

const std::string kFullExample2 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "pre_in"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "cnn_in"
    format: "RGB"
    order: "HWC"
    shape: [416, 416, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "cnn_out"
    shape: [13, 13, 125]
    order: "HWC"
    type: "fp16"

output_from_post:
  -
    name: "post_out"
    shape: [125, 13, 13]
    order: "CHW"
    type: "fp32"

#######################################
# Preprocess
#######################################
preprocess:
  -
    src: ["pre_in"]
    shape_in: [[480, 640, 2]]
    dtype_in: ["uint8"]
    dorder_in: ["HWC"]

    dest: ["cnn_in"]
    shape_out: [[416, 416, 3]]
    dtype_out: ["fp16"]
    dorder_out: ["HWC"]

    operations:
    -
      op: conv_yuv2rgb
      shape_in: [[480, 640, 2]]
      dtype_in: ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[480, 640, 3]]
      dtype_out: ["uint8"]
      dorder_out: ["HWC"]
      param:
        DOUT_RGB_FORMAT: 0
    -
      op: resize_hwc
      shape_in: [[480, 640, 3]]
      dtype_in: ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[416, 416, 3]]
      dtype_out: ["uint8"]
      dorder_out: ["HWC"]
      param:
        RESIZE_ALG: 1
        DATA_TYPE: 0
        shape_out: [416, 416]
    -
      op: cast_any_to_fp16
      shape_in: [[416, 416, 3]]
      dtype_in: ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[416, 416, 3]]
      dtype_out: ["fp16"]
      dorder_out: ["HWC"]
      param:
        DIN_FORMAT: 0
    -
      op: normalize
      shape_in: [[416, 416, 3]]
      dtype_in: ["fp16"]
      dorder_in: ["HWC"]
      shape_out: [[416, 416, 3]]
      dtype_out: ["fp16"]
      dorder_out: ["HWC"]
      param:
        DOUT_RGB_ORDER: 0
        cof_add: [0.0, 0.0, 0.0]
        cof_mul: [0.00392157, 0.00392157, 0.00392157]

#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["cnn_out"]
    shape_in: [[13, 13, 125]]
    dtype_in: ["fp16"]
    dorder_in: ["HWC"]

    dest: ["post_out"]
    shape_out: [[125, 13, 13]]
    dtype_out: ["fp32"]
    dorder_out: ["CHW"]

    operations:
      -
        op: transpose
        shape_in: [[13, 13, 125]]
        dtype_in: ["fp16"]
        dorder_in: ["HWC"]
        shape_out: [[125, 13, 13]]
        dtype_out: ["fp16"]
        dorder_in: ["CHW"]
        param:
          WORD_SIZE: 1
          IS_CHW2HWC: 0
      -
        ops: cast_fp16_fp32
        shape_in: [[125, 13, 13]]
        dtype_in: ["fp16"]
        dorder_in: ["CHW"]
        shape_out: [[125, 13, 13]]
        dtype_out: ["fp32"]
        dorder_out: ["CHW"]
        param:
          CAST_MODE: 0
)YAML";

const std::string kFullExample3 = R"YAML(
#######################################
# Input data
#######################################
input_to_pre:
  -
    name: "camera_data"
    format: "YUY2"
    order: "HWC"
    shape: [480, 640, 2]
    type: "uint8"

input_to_body:
  -
    name: "images"
    format: "RGB"
    order: "HWC"
    shape: [416, 416, 3]
    type: "fp16"

#######################################
# Output data
#######################################
output_from_body:
  -
    name: "391"
    shape: [13,13, 255]
    order: "HWC"
    type: "fp16"
  -
    name: "371"
    shape: [26,26,255]
    order: "HWC"
    type: "fp16"
  -
    name: "output"
    shape: [52, 52,255]
    order: "HWC"
    type: "fp16"

output_from_post:
  -
    name: "post_out_13x13"
    shape: [13, 13, 255]
    order: "HWC"
    type: "fp32"
  -
    name: "post_out_26x26"
    shape: [26, 26, 255]
    order: "HWC"
    type: "fp32"
  -
    name: "post_out_52x52"
    shape: [52, 52, 255]
    order: "HWC"
    type: "fp32"

#######################################
# Preprocess
#######################################
preprocess:
  -
    src      : ["camera_data"]
    shape_in : [[480, 640, 2]]
    dtype_in : ["uint8"]
    dorder_in: ["HWC"]

    dest     : ["images"]
    shape_out: [[416, 416, 3]]
    dtype_out: ["fp16"]
    dorder_out: ["HWC"]

    operations:
    -
      op: conv_yuv2rgb
      shape_in : [[480, 640, 2]]
      dtype_in : ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[480, 640, 3]]
      dtype_out: ["uint8"]
      dorder_out: ["HWC"]
      param:
        DOUT_RGB_FORMAT: 0
    -
      op: resize_hwc
      shape_in : [[480, 640, 3]]
      dtype_in : ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[416, 416, 3]]
      dtype_out: ["uint8"]
      dorder_out: ["HWC"]
      param:
        RESIZE_ALG: 1 # "Bilinear"
        DATA_TYPE: 0  # "uint8"
        shape_out: [416, 416]

    -
      op: cast_any_to_fp16
      shape_in : [[416, 416, 3]]
      dtype_in : ["uint8"]
      dorder_in: ["HWC"]
      shape_out: [[416, 416, 3]]
      dtype_out: ["fp16"]
      dorder_out: ["HWC"]
      param:
        DIN_FORMAT: 0 # "uint8"

    -
      op: normalize
      shape_in : [[416, 416, 3]]
      dtype_in : ["fp16"]
      dorder_in: ["HWC"]
      shape_out: [[416, 416, 3]]
      dtype_out: ["fp32"]
      dorder_out: ["HWC"]
      param:
        DOUT_RGB_ORDER: 0 # Output RGB order = Input RGB order
        cof_add: [0.0, 0.0, 0.0]
        cof_mul: [0.00392157, 0.00392157, 0.00392157]


#######################################
# Postprocess
#######################################
postprocess:
  -
    src: ["391"]
    shape_in : [[13,13, 255]]
    dtype_in : ["fp16"]
    dorder_in: ["HWC"]

    dest: ["post_out_13x13"]
    shape_out: [[13,13, 255]]
    dtype_out : ["fp32"]
    dorder_out : ["HWC"]

    operations:
      -
        op : cast_fp16_fp32
        shape_in : [[13, 13, 255]]
        dtype_in : ["fp16"]
        dorder_in: ["HWC"]
        shape_out: [[13, 13, 255]]
        dtype_out: ["fp32"]
        dorder_out: ["HWC"]
        param:
          CAST_MODE: 0 # FP16 to FP32

  -
    src: ["371"]
    shape_in : [[26, 26, 255]]
    dtype_in : ["fp16"]
    dorder_in: ["HWC"]

    dest: ["post_out_26x26"]
    shape_out: [[26, 26, 255]]
    dtype_out : ["fp32"]
    dorder_out : ["HWC"]

    operations:
      -
        op : cast_fp16_fp32
        shape_in : [[26, 26, 255]]
        dtype_in : ["fp16"]
        dorder_in: ["HWC"]
        shape_out: [[26, 26, 255]]
        dtype_out: ["fp32"]
        dorder_out: ["HWC"]
        param:
          CAST_MODE: 0 # FP16 to FP32

  -
    src: ["output"]
    shape_in : [[52, 52, 255]]
    dtype_in : ["fp16"]
    dorder_in: ["HWC"]

    dest: ["post_out_52x52"]
    shape_out: [[52, 52, 255]]
    dtype_out : ["fp32"]
    dorder_out : ["HWC"]

    operations:
      -
        op : cast_fp16_fp32
        shape_in : [[52, 52, 255]]
        dtype_in : ["fp16"]
        dorder_in: ["HWC"]
        shape_out: [[52, 52, 255]]
        dtype_out: ["fp32"]
        dorder_out: ["HWC"]
        param:
          CAST_MODE: 0 # FP16 to FP32
)YAML";

// ---- helpers ----

std::string replaced(std::string text, const std::string& from, const std::string& to, int expect_count = 1) {
  int n = 0;
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size(), ++n) text.replace(pos, from.size(), to);
  EXPECT_EQ(n, expect_count) << "replacing '" << from << "'";
  return text;
}

std::vector<OpKind> kinds(const Process& p) {
  std::vector<OpKind> r;
  for (auto& o : p.operations) r.push_back(o.kind);
  return r;
}

TensorInfo T(std::vector<int64_t> shape, Order order, ImageFormat format, ElemType type) { return {shape, order, format, type}; }

/// Parses and returns the error text ("" when it parses).
std::string errorOf(const std::string& yaml, const ParseOptions& o = {}) {
  try {
    parsePrePost(yaml, "test.yaml", o);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    return e.what();
  }
  return "";
}

// A compact definition for the invalid variants: ex. 1 of §5.5 in flow style, every part replaceable.
const std::string kYuv = "{op: conv_yuv2rgb, param: {DOUT_RGB_FORMAT: 0}}";
const std::string kResize224 = "{op: resize_hwc, param: {RESIZE_ALG: 1, DATA_TYPE: 0, shape_out: [224, 224]}}";
const std::string kCastU8 = "{op: cast_any_to_fp16, param: {DIN_FORMAT: 0}}";
const std::string kNorm =
    "{op: normalize, param: {DOUT_RGB_ORDER: 0, cof_add: [-123.675, -116.28, -103.53], cof_mul: [0.01712475, 0.017507, "
    "0.01742919]}}";
const std::string kMemcopy = "{op: memcopy, param: {WORD_SIZE: 2}}";
const std::string kSoftmax32 = "{op: softmax, param: {DOUT_FORMAT: 1}}";

struct Def {
  std::string pre_in = "{name: pre_in, shape: [480, 640, 2], order: HWC, format: YUY2, type: uint8}";
  std::string body_in = "{name: cnn_in, shape: [224, 224, 3], order: HWC, format: RGB, type: fp16}";
  std::string body_out = "{name: cnn_out, shape: [1000], order: C, type: fp16}";
  std::string post_out = "{name: post_out, shape: [1000], order: C, type: fp32}";
  std::vector<std::string> pre = {kYuv, kResize224, kCastU8, kNorm};
  std::vector<std::string> post = {kSoftmax32};
  std::string pre_entries, post_entries;  // replace the whole preprocess / postprocess lists when set

  std::string str() const {
    auto list = [](const std::vector<std::string>& ops) {
      std::string s;
      for (auto& o : ops) s += "      - " + o + "\n";
      return s;
    };
    std::string s = "input_to_pre: [" + pre_in + "]\ninput_to_body: [" + body_in + "]\noutput_from_body: [" + body_out +
                    "]\noutput_from_post: [" + post_out + "]\n";
    s += pre_entries.empty() ? "preprocess:\n  - src: [pre_in]\n    dest: [cnn_in]\n    operations:\n" + list(pre)
                             : pre_entries;
    s += post_entries.empty() ? "postprocess:\n  - src: [cnn_out]\n    dest: [post_out]\n    operations:\n" + list(post)
                              : post_entries;
    return s;
  }
};

}  // namespace

// ---- §5.5 examples ----

TEST(PrePostExamples, Example1Classification) {
  PrePost pp = parsePrePost(kExample1, "example1.yaml");
  ASSERT_EQ(pp.input_to_pre.size(), 1u);
  EXPECT_EQ(pp.input_to_pre[0].name, "pre_in");
  EXPECT_EQ(pp.input_to_pre[0].info(), T({480, 640, 2}, Order::kHWC, ImageFormat::kYUY2, ElemType::kU8));
  EXPECT_EQ(pp.input_to_body[0].info(), T({224, 224, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kF16));
  EXPECT_EQ(pp.output_from_body[0].info(), T({1000}, Order::kC, ImageFormat::kNone, ElemType::kF16));
  EXPECT_EQ(pp.output_from_post[0].info(), T({1000}, Order::kC, ImageFormat::kNone, ElemType::kF32));
  ASSERT_EQ(pp.preprocess.size(), 1u);
  const Process& pre = pp.preprocess[0];
  EXPECT_EQ(pre.src, "pre_in");
  EXPECT_EQ(pre.dest, "cnn_in");
  EXPECT_EQ(kinds(pre), (std::vector<OpKind>{OpKind::kConvYuv2Rgb, OpKind::kResizeHwc, OpKind::kCastAnyToFp16,
                                              OpKind::kNormalize}));
  // Parameters, defaults included (DIN_YUV_FORMAT is not written: 0 = "Y0UY1V"("YUY2")).
  EXPECT_EQ(std::get<ConvYuv2RgbParams>(pre.operations[0].params),
            (ConvYuv2RgbParams{YuvFormat::kYUYV, RgbFormat::kRGB}));
  EXPECT_EQ(std::get<ResizeHwcParams>(pre.operations[1].params),
            (ResizeHwcParams{ResizeAlg::kBilinear, ElemType::kU8, 224, 224}));
  EXPECT_EQ(std::get<CastAnyToFp16Params>(pre.operations[2].params).din_format, ElemType::kU8);
  const auto& norm = std::get<NormalizeParams>(pre.operations[3].params);
  EXPECT_FALSE(norm.swap_rb);
  EXPECT_EQ(norm.cof_add, (std::vector<double>{-123.675, -116.28, -103.53}));
  EXPECT_EQ(norm.cof_mul, (std::vector<double>{0.01712475, 0.017507, 0.01742919}));
  // Propagation: YUY2 [480,640,2] → RGB [480,640,3] → [224,224,3] uint8 → fp16 → fp16.
  EXPECT_EQ(pre.operations[0].in, pp.input_to_pre[0].info());
  EXPECT_EQ(pre.operations[0].out, T({480, 640, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(pre.operations[1].out, T({224, 224, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(pre.operations[2].out, T({224, 224, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kF16));
  EXPECT_EQ(pre.operations[3].out, pp.input_to_body[0].info());
  ASSERT_EQ(pp.postprocess.size(), 1u);
  const Process& post = pp.postprocess[0];
  EXPECT_EQ(kinds(post), std::vector<OpKind>{OpKind::kSoftmax});
  EXPECT_EQ(std::get<SoftmaxParams>(post.operations[0].params).dout_format, ElemType::kF32);
  EXPECT_EQ(post.operations[0].in, pp.output_from_body[0].info());
  EXPECT_EQ(post.operations[0].out, pp.output_from_post[0].info());
  EXPECT_EQ(describe(pre.operations[0].in), "[480, 640, 2] HWC YUY2 uint8");
}

TEST(PrePostExamples, Example2SingleScaleDetection) {
  PrePost pp = parsePrePost(kExample2, "example2.yaml");
  const Process& pre = pp.preprocess[0];
  EXPECT_EQ(pre.operations[1].out.shape, (std::vector<int64_t>{416, 416, 3}));
  EXPECT_EQ(pre.operations[3].out, T({416, 416, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kF16));
  EXPECT_EQ(std::get<NormalizeParams>(pre.operations[3].params).cof_add, (std::vector<double>{0.0, 0.0, 0.0}));
  const Process& post = pp.postprocess[0];
  EXPECT_EQ(kinds(post), (std::vector<OpKind>{OpKind::kTranspose, OpKind::kCastFp16Fp32}));
  EXPECT_EQ(std::get<TransposeParams>(post.operations[0].params), (TransposeParams{1, 0}));
  EXPECT_EQ(post.operations[0].in, T({13, 13, 125}, Order::kHWC, ImageFormat::kNone, ElemType::kF16));
  EXPECT_EQ(post.operations[0].out, T({125, 13, 13}, Order::kCHW, ImageFormat::kNone, ElemType::kF16));
  EXPECT_EQ(post.operations[1].out, T({125, 13, 13}, Order::kCHW, ImageFormat::kNone, ElemType::kF32));
  EXPECT_EQ(post.operations[1].out, pp.output_from_post[0].info());
}

TEST(PrePostExamples, Example3MultiOutput) {
  PrePost pp = parsePrePost(kExample3, "example3.yaml");
  ASSERT_EQ(pp.output_from_body.size(), 3u);
  ASSERT_EQ(pp.postprocess.size(), 3u);
  const std::vector<std::pair<std::string, int64_t>> outs = {{"391", 13}, {"371", 26}, {"output", 52}};
  for (size_t i = 0; i < 3; ++i) {
    const Process& p = pp.postprocess[i];
    EXPECT_EQ(p.src, outs[i].first);
    EXPECT_EQ(p.dest, fmt::format("post_out_{0}x{0}", outs[i].second));
    ASSERT_EQ(kinds(p), std::vector<OpKind>{OpKind::kCastFp16Fp32});
    int64_t s = outs[i].second;
    EXPECT_EQ(p.operations[0].in, T({s, s, 255}, Order::kHWC, ImageFormat::kNone, ElemType::kF16));
    EXPECT_EQ(p.operations[0].out, T({s, s, 255}, Order::kHWC, ImageFormat::kNone, ElemType::kF32));
  }
  EXPECT_EQ(pp.preprocess[0].src, "camera_data");
  EXPECT_EQ(pp.preprocess[0].dest, "images");
  EXPECT_EQ(pp.preprocess[0].operations.back().out, pp.input_to_body[0].info());
}

TEST(PrePostExamples, Example4CropAsPrintedHasATypeMismatch) {
  // The manual's text: output_from_post says fp16 after a cast to fp32.
  std::string msg = errorOf(kExample4);
  EXPECT_NE(msg.find("postprocess[0]: the operations produce type fp32 but output_from_post 'post_out' declares type "
                     "fp16 (the last operation, cast_fp16_fp32, outputs [3, 96, 96] CHW fp32)"),
            std::string::npos)
      << msg;
}

TEST(PrePostExamples, Example4Crop) {
  std::string fixed = replaced(kExample4, "    shape: [3,96,96]\n    order: \"CHW\"\n    type: \"fp16\"",
                               "    shape: [3,96,96]\n    order: \"CHW\"\n    type: \"fp32\"");
  PrePost pp = parsePrePost(fixed, "example4.yaml");
  const Process& pre = pp.preprocess[0];
  EXPECT_EQ(kinds(pre), (std::vector<OpKind>{OpKind::kConvYuv2Rgb, OpKind::kCrop, OpKind::kResizeHwc,
                                              OpKind::kCastAnyToFp16}));
  EXPECT_EQ(std::get<CropParams>(pre.operations[1].params), (CropParams{60, 40, 200, 200, 0, Order::kHWC}));
  EXPECT_EQ(pre.operations[1].in, T({480, 640, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(pre.operations[1].out, T({200, 200, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(pre.operations[2].out, T({96, 96, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(pre.operations[3].out, T({96, 96, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kF16));
  const Process& post = pp.postprocess[0];
  EXPECT_EQ(post.operations[0].out, T({3, 96, 96}, Order::kCHW, ImageFormat::kNone, ElemType::kF16));
  EXPECT_EQ(post.operations[1].out, T({3, 96, 96}, Order::kCHW, ImageFormat::kNone, ElemType::kF32));
}

TEST(PrePostExamples, Example5MultiInput) {
  PrePost pp = parsePrePost(kExample5, "example5.yaml");
  ASSERT_EQ(pp.input_to_pre.size(), 2u);
  ASSERT_EQ(pp.preprocess.size(), 2u);
  EXPECT_EQ(pp.preprocess[0].src, "input_preA");
  EXPECT_EQ(pp.preprocess[0].dest, "input_A");
  EXPECT_EQ(pp.preprocess[1].src, "input_preB");
  EXPECT_EQ(pp.preprocess[1].dest, "input_B");
  for (const Process& p : pp.preprocess) {
    ASSERT_EQ(kinds(p), std::vector<OpKind>{OpKind::kMemcopy});
    EXPECT_EQ(std::get<MemcopyParams>(p.operations[0].params).word_size, 2);
    EXPECT_EQ(p.operations[0].out, T({64, 64, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kF16));
  }
  EXPECT_EQ(kinds(pp.postprocess[0]), std::vector<OpKind>{OpKind::kMemcopy});
  EXPECT_EQ(pp.postprocess[0].operations[0].out, T({16, 16, 32}, Order::kHWC, ImageFormat::kNone, ElemType::kF16));
}

// ---- Appendix A: the legacy full format ----

TEST(PrePostFullFormat, Example1SameModelAsCurrentFormat) {
  ParseOptions full;
  full.full_format = true;
  PrePost legacy = parsePrePost(kFullExample1, "full1.yaml", full);
  EXPECT_EQ(legacy, parsePrePost(kExample1, "example1.yaml"));
}

TEST(PrePostFullFormat, Example2AsPrintedAndCorrected) {
  ParseOptions full;
  full.full_format = true;
  std::string msg = errorOf(kFullExample2, full);
  EXPECT_NE(msg.find("key 'dorder_in' is given twice"), std::string::npos) << msg;
  std::string fixed = replaced(kFullExample2, "        dtype_out: [\"fp16\"]\n        dorder_in: [\"CHW\"]",
                               "        dtype_out: [\"fp16\"]\n        dorder_out: [\"CHW\"]");
  msg = errorOf(fixed, full);
  EXPECT_NE(msg.find("unknown key 'ops'"), std::string::npos) << msg;
  fixed = replaced(fixed, "ops: cast_fp16_fp32", "op: cast_fp16_fp32");
  EXPECT_EQ(parsePrePost(fixed, "full2.yaml", full), parsePrePost(kExample2, "example2.yaml"));
}

TEST(PrePostFullFormat, Example3AsPrintedAndCorrected) {
  ParseOptions full;
  full.full_format = true;
  std::string msg = errorOf(kFullExample3, full);
  EXPECT_NE(msg.find("preprocess[0].operations[3] (normalize).dtype_out: declares fp32 but normalize gives fp16"),
            std::string::npos)
      << msg;
  std::string fixed = replaced(kFullExample3, "      dtype_out: [\"fp32\"]\n      dorder_out: [\"HWC\"]\n      param:\n        DOUT_RGB_ORDER",
                               "      dtype_out: [\"fp16\"]\n      dorder_out: [\"HWC\"]\n      param:\n        DOUT_RGB_ORDER");
  EXPECT_EQ(parsePrePost(fixed, "full3.yaml", full), parsePrePost(kExample3, "example3.yaml"));
}

TEST(PrePostFullFormat, DeclarationsAreChecked) {
  ParseOptions full;
  full.full_format = true;
  // A wrong intermediate shape, a wrong entry-level declaration, a missing key, more than one preprocess entry.
  std::string msg = errorOf(replaced(kFullExample1, "shape_out: [[480, 640, 3]]", "shape_out: [[480, 640, 2]]"), full);
  EXPECT_NE(msg.find("preprocess[0].operations[0] (conv_yuv2rgb).shape_out: declares [480, 640, 2] but conv_yuv2rgb "
                     "gives [480, 640, 3]"),
            std::string::npos)
      << msg;
  msg = errorOf(replaced(kFullExample1, "    dest: [\"post_out\"]\n    shape_out: [[1000]]\n    dtype_out: [\"fp32\"]",
                         "    dest: [\"post_out\"]\n    shape_out: [[1000]]\n    dtype_out: [\"fp16\"]"),
                full);
  EXPECT_NE(msg.find("postprocess[0].dtype_out: declares fp16 but the operations gives fp32"), std::string::npos) << msg;
  msg = errorOf(replaced(kFullExample1, "    dtype_in: [\"uint8\"]\n    dorder_in: [\"HWC\"]\n\n    dest: [\"cnn_in\"]",
                         "    dtype_in: [\"uint8\"]\n\n    dest: [\"cnn_in\"]"),
                full);
  EXPECT_NE(msg.find("preprocess[0]: key 'dorder_in' is required in the full format (Appendix A.2)"), std::string::npos) << msg;
  // The full format's per-operation keys are not part of the current format.
  msg = errorOf(kFullExample1);
  EXPECT_NE(msg.find("key 'shape_in' belongs to the legacy full format of Appendix A (-PrePostFULL)"), std::string::npos)
      << msg;
  Def two;
  two.pre_entries =
      "preprocess:\n  - {src: [pre_in], shape_in: [[480, 640, 2]], dtype_in: [uint8], dorder_in: [HWC], dest: [cnn_in], "
      "shape_out: [[224, 224, 3]], dtype_out: [fp16], dorder_out: [HWC], operations: []}\n  - {src: [pre_in]}\n";
  msg = errorOf(two.str(), full);
  EXPECT_NE(msg.find("the full format allows one preprocess entry only"), std::string::npos) << msg;
}

// ---- more valid definitions ----

TEST(PrePostValid, ShapePostSplitsOneOutput) {
  Def d;
  d.body_out = "{name: cnn_out, order: HWC, shape: [77, 46, 57], type: fp16, shape_post: [{name: heatmap, shape: [77, 46, "
               "19]}, {name: paf, shape: [77, 46, 38]}]}";
  d.post_out = "{name: hm, shape: [77, 46, 19], order: HWC, type: fp32}, {name: pf, shape: [38, 77, 46], order: CHW, type: fp16}";
  d.post_entries =
      "postprocess:\n"
      "  - {src: [heatmap], dest: [hm], operations: [{op: cast_fp16_fp32, param: {CAST_MODE: 0}}]}\n"
      "  - {src: [paf], dest: [pf], operations: [{op: transpose, param: {WORD_SIZE: 1, IS_CHW2HWC: 0}}]}\n";
  PrePost pp = parsePrePost(d.str(), "split.yaml");
  ASSERT_EQ(pp.output_from_body[0].shape_post.size(), 2u);
  EXPECT_EQ(pp.output_from_body[0].shape_post[1], (ShapePost{"paf", {77, 46, 38}}));
  EXPECT_EQ(pp.postprocess[0].operations[0].in, T({77, 46, 19}, Order::kHWC, ImageFormat::kNone, ElemType::kF16));
  EXPECT_EQ(pp.postprocess[1].operations[0].out, T({38, 77, 46}, Order::kCHW, ImageFormat::kNone, ElemType::kF16));
  // The pieces must split the channels exactly, and postprocess reads the pieces, not the whole output.
  Def bad_sum = d;
  bad_sum.body_out = replaced(d.body_out, "[77, 46, 38]", "[77, 46, 37]");
  EXPECT_NE(errorOf(bad_sum.str()).find("the pieces' channels add up to 56, but output 'cnn_out' has 57"), std::string::npos);
  Def bad_hw = d;
  bad_hw.body_out = replaced(d.body_out, "[77, 46, 38]", "[77, 45, 38]");
  EXPECT_NE(errorOf(bad_hw.str()).find("every dimension but the channel"), std::string::npos);
  Def whole = d;
  whole.post_entries = replaced(d.post_entries, "src: [paf]", "src: [cnn_out]");
  EXPECT_NE(errorOf(whole.str()).find("output_from_body 'cnn_out' is split by shape_post; postprocess src must name its "
                                      "pieces (heatmap, paf)"),
            std::string::npos);
}

TEST(PrePostValid, PostprocessChainsThroughAnotherDest) {
  // §9's "postprocess src matches other postprocess dest": ex. 2's postprocessing in two entries.
  std::string chained = replaced(kExample2,
                                 "          IS_CHW2HWC: 0 # HWC to CHW\n      -\n",
                                 "          IS_CHW2HWC: 0 # HWC to CHW\n  - src: [\"tmp\"]\n    dest: [\"post_out\"]\n"
                                 "    operations:\n      -\n");
  chained = replaced(chained, "    src: [\"cnn_out\"]\n\n    dest: [\"post_out\"]", "    src: [\"cnn_out\"]\n\n    dest: [\"tmp\"]");
  PrePost pp = parsePrePost(chained, "chain.yaml");
  ASSERT_EQ(pp.postprocess.size(), 2u);
  EXPECT_EQ(pp.postprocess[1].src, "tmp");
  EXPECT_EQ(pp.postprocess[1].operations[0].in, T({125, 13, 13}, Order::kCHW, ImageFormat::kNone, ElemType::kF16));
  EXPECT_EQ(pp.postprocess[1].operations[0].out, pp.output_from_post[0].info());
  // The second entry reads a name nobody produces.
  std::string msg = errorOf(replaced(chained, "src: [\"tmp\"]", "src: [\"tmq\"]"));
  EXPECT_NE(msg.find("postprocess[1].src: [Error Y02] Error in prepost yaml file: postprocessing src =/= postprocessing "
                     "dest or output_from_body name\nMake sure the postprocess \"src\" matches other postprocess \"dest\" "
                     "or output_from_body \"name\"."),
            std::string::npos)
      << msg;
}

TEST(PrePostValid, TransposeCropCastNormalizeSwap) {
  // CHW uint8 camera data → HWC, crop, resize, fp16, normalize with R/B swapped (RGB → BGR body input).
  Def d;
  d.pre_in = "{name: pre_in, shape: [3, 300, 400], order: CHW, format: RGB, type: uint8}";
  d.body_in = "{name: cnn_in, shape: [224, 224, 3], order: HWC, format: BGR, type: fp16}";
  d.pre = {"{op: transpose, param: {WORD_SIZE: 0, IS_CHW2HWC: 1}}",
           "{op: crop, param: {CROP_POS_X: 50, CROP_POS_Y: 0, shape_out: [300, 300], DATA_TYPE: 0, DATA_FORMAT: 0}}",
           kResize224, kCastU8,
           "{op: normalize, param: {DOUT_RGB_ORDER: 1, cof_add: [-103.53, -116.28, -123.675], cof_mul: [1, 1, 1]}}"};
  PrePost pp = parsePrePost(d.str(), "t.yaml");
  const auto& ops = pp.preprocess[0].operations;
  EXPECT_EQ(ops[0].out, T({300, 400, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(ops[1].out, T({300, 300, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kU8));
  EXPECT_EQ(ops[4].in.format, ImageFormat::kRGB);
  EXPECT_EQ(ops[4].out, T({224, 224, 3}, Order::kHWC, ImageFormat::kBGR, ElemType::kF16));
}

TEST(PrePostValid, CropOfChwFp16OutputsHwc) {
  // §5.3.1: crop takes HWC or CHW (DATA_FORMAT) and outputs HWC.
  Def d;
  d.pre_in = "{name: pre_in, shape: [3, 100, 120], order: CHW, format: RGB, type: fp16}";
  d.body_in = "{name: cnn_in, shape: [64, 64, 3], order: HWC, format: RGB, type: fp16}";
  d.pre = {"{op: crop, param: {CROP_POS_X: 10, CROP_POS_Y: 20, shape_out: [64, 64], DATA_TYPE: 1, DATA_FORMAT: 1}}",
           kMemcopy};
  PrePost pp = parsePrePost(d.str(), "t.yaml");
  EXPECT_EQ(pp.preprocess[0].operations[0].out, T({64, 64, 3}, Order::kHWC, ImageFormat::kRGB, ElemType::kF16));
}

TEST(PrePostValid, GrayAndArgminmax) {
  // conv_x2gray with the parameter spelled as in the manual's example (DIN_YUV_FORMAT), argminmax over channels.
  Def d;
  d.body_in = "{name: cnn_in, shape: [224, 224, 1], order: HWC, format: GRAY, type: fp16}";
  d.pre = {"{op: conv_x2gray, param: {DIN_YUV_FORMAT: 0}}",
           "{op: resize_hwc, param: {RESIZE_ALG: 0, DATA_TYPE: 0, shape_out: [224, 224]}}", kCastU8};
  d.body_out = "{name: cnn_out, shape: [13, 13, 125], order: HWC, type: fp16}";
  d.post_out = "{name: post_out, shape: [13, 13, 1], order: HWC, type: uint8}";
  d.post = {"{op: argminmax, param: {DIN_FORMAT: 0, DOUT_TYPE: 0, AXIS: 0, ARG_MODE: 0}}"};
  PrePost pp = parsePrePost(d.str(), "t.yaml");
  EXPECT_EQ(std::get<ConvX2GrayParams>(pp.preprocess[0].operations[0].params).din_format, GrayInput::kY0UY1V);
  EXPECT_EQ(pp.preprocess[0].operations[0].out, T({480, 640, 1}, Order::kHWC, ImageFormat::kGray, ElemType::kU8));
  EXPECT_EQ(std::get<ArgMinMaxParams>(pp.postprocess[0].operations[0].params),
            (ArgMinMaxParams{Order::kHWC, ElemType::kU8, ArgAxis::kChannel, ArgMode::kArgMax}));
  EXPECT_EQ(pp.postprocess[0].operations[0].out, pp.output_from_post[0].info());
  // Argmin over the width of a CHW tensor, uint16 indices.
  Operation op{OpKind::kArgMinMax, ArgMinMaxParams{Order::kCHW, ElemType::kU16, ArgAxis::kWidth, ArgMode::kArgMin}, {}, {}};
  EXPECT_EQ(applyOperation(Stage::kPost, op, T({125, 13, 20}, Order::kCHW, ImageFormat::kNone, ElemType::kF16)),
            T({125, 13, 1}, Order::kCHW, ImageFormat::kNone, ElemType::kU16));
}

TEST(PrePostValid, EveryYuvFormatCode) {
  for (int code : {0, 1, 2, 3, 4096, 4097, 4098, 4099, 4100, 4101, 4102, 4103, 4104, 4105}) {
    Def d;
    bool rgb_in = code == 4102 || code == 4104;  // IMC1 / IMC3: the table asks for format RGB
    if (rgb_in) d.pre_in = "{name: pre_in, shape: [480, 640, 3], order: HWC, format: RGB, type: uint8}";
    d.pre[0] = fmt::format("{{op: conv_yuv2rgb, param: {{DIN_YUV_FORMAT: {}, DOUT_RGB_FORMAT: 0}}}}", code);
    PrePost pp = parsePrePost(d.str(), "t.yaml");
    const auto& p = std::get<ConvYuv2RgbParams>(pp.preprocess[0].operations[0].params);
    EXPECT_EQ(static_cast<int>(p.din_yuv_format), code);
    EXPECT_EQ(requiredInputFormat(p.din_yuv_format), rgb_in ? ImageFormat::kRGB : ImageFormat::kYUY2);
    // and the other format is refused
    Def w = d;
    w.pre_in = rgb_in ? "{name: pre_in, shape: [480, 640, 2], order: HWC, format: YUY2, type: uint8}"
                      : "{name: pre_in, shape: [480, 640, 3], order: HWC, format: RGB, type: uint8}";
    EXPECT_NE(errorOf(w.str()).find(fmt::format("conv_yuv2rgb: DIN_YUV_FORMAT {} (\"{}\") needs format {}", code,
                                                toString(p.din_yuv_format), rgb_in ? "RGB" : "YUY2")),
              std::string::npos)
        << code;
  }
}

TEST(PrePostValid, LoadFromFileNamesTheFile) {
  std::string path = std::string(NPUC_BINARY_DIR) + "/prepost_test_" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream f(path);
    f << kExample5;
  }
  EXPECT_EQ(loadPrePost(path), parsePrePost(kExample5, "x"));
  {
    std::ofstream f(path);
    f << replaced(kExample5, "WORD_SIZE : 2 # FP16\n\n#", "WORD_SIZE : 4 # FP16\n\n#");
  }
  try {
    loadPrePost(path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": preprocess[1].operations[0] (memcopy).param.WORD_SIZE: 4 is not a valid "
                                                 "WORD_SIZE for preprocessing memcopy",
                                          0),
              0u)
        << e.what();
  }
  std::remove(path.c_str());
}

// ---- model names: [Error Y01] and [Error(DRP Converter-007)] ----

TEST(PrePostModelNames, MatchingNamesPass) {
  ParseOptions o;
  o.model_inputs = {"images"};
  o.model_outputs = {"output", "371", "391"};
  EXPECT_NO_THROW(parsePrePost(kExample3, "example3.yaml", o));
  o.check_prepost = false;
  EXPECT_NO_THROW(parsePrePost(kExample3, "example3.yaml", o));
}

TEST(PrePostModelNames, Errors) {
  ParseOptions o;
  o.model_inputs = {"data"};
  EXPECT_NE(errorOf(kExample1, o).find("test.yaml: input_to_body: [Error Y01] Error in prepost yaml file: set input_to_body "
                                       "name as:\ndata\nMake sure that input_to_body \"name\"(s) matches the input node "
                                       "name(s) in ONNX."),
            std::string::npos)
      << errorOf(kExample1, o);
  o = {};
  o.model_outputs = {"prob", "feat"};
  EXPECT_NE(errorOf(kExample1, o).find("[Error Y01] Error in prepost yaml file: set output_from_body name as:\nprob\nfeat\n"
                                       "Make sure that output_from_body \"name\"(s) matches the output node name(s) in ONNX."),
            std::string::npos)
      << errorOf(kExample1, o);
  // -CheckPrePost OFF: the converter's message.
  o = {};
  o.check_prepost = false;
  o.model_inputs = {"data"};
  EXPECT_NE(errorOf(kExample1, o).find("input_to_body[0].name: [Error(DRP Converter-007)] Node cnn_in is not found.\nMake "
                                       "sure that the node names defined in prepost.yaml file match the input/output nodes "
                                       "in ONNX file."),
            std::string::npos)
      << errorOf(kExample1, o);
  o.model_inputs = {"cnn_in"};
  o.model_outputs = {"prob"};
  EXPECT_NE(errorOf(kExample1, o).find("output_from_body[0].name: [Error(DRP Converter-007)] Node cnn_out is not found."),
            std::string::npos);
  // A model input the YAML leaves out.
  o.model_inputs = {"cnn_in", "extra"};
  o.model_outputs = {};
  EXPECT_NE(errorOf(kExample1, o).find("[Error Y01] Error in prepost yaml file: set : preprocess dest must include all "
                                       "name(s) of onnx input node(s) listed below:\ncnn_in\nextra\n"),
            std::string::npos)
      << errorOf(kExample1, o);
  o.model_inputs = {};
  o.model_outputs = {"cnn_out", "extra"};
  EXPECT_NE(errorOf(kExample1, o).find("[Error Y01] Error in prepost yaml file: postprocess src must include all name(s) "
                                       "of onnx output node(s) listed below:\ncnn_out\nextra\n"),
            std::string::npos)
      << errorOf(kExample1, o);
}

// ---- the table of invalid variants ----

struct BadCase {
  std::string name;
  std::string yaml;
  std::string expect;  // a substring of the error text
};

std::vector<BadCase> badCases() {
  std::vector<BadCase> c;
  auto add = [&](std::string name, const Def& d, std::string expect) { c.push_back({std::move(name), d.str(), std::move(expect)}); };
  auto pre = [&](std::string name, std::vector<std::string> ops, std::string expect, std::string pre_in = "",
                 std::string body_in = "") {
    Def d;
    d.pre = std::move(ops);
    if (!pre_in.empty()) d.pre_in = pre_in;
    if (!body_in.empty()) d.body_in = body_in;
    add(std::move(name), d, std::move(expect));
  };
  auto post = [&](std::string name, std::vector<std::string> ops, std::string expect, std::string body_out = "",
                  std::string post_out = "") {
    Def d;
    d.post = std::move(ops);
    if (!body_out.empty()) d.body_out = body_out;
    if (!post_out.empty()) d.post_out = post_out;
    add(std::move(name), d, std::move(expect));
  };
  const std::string y02 = "[Error Y02] Error in prepost yaml file: ";

  // §9 messages on the manual's own examples.
  c.push_back({"Y02PreSrc", replaced(kExample1, "src: [\"pre_in\"]", "src: [\"camera\"]"),
               "preprocess[0].src: " + y02 + "preprocess src =/= input_to_pre name\nMake sure the preprocess \"src\" "
               "matches input_to_pre \"name\"."});
  c.push_back({"Y02PreDest", replaced(kExample1, "dest: [\"cnn_in\"]", "dest: [\"data\"]"),
               "preprocess[0].dest: " + y02 + "preprocess dest =/= input_to_body name\nMake sure the preprocess \"dest\" "
               "matches input_to_body \"name\"."});
  c.push_back({"Y02PreInputUnused", replaced(kExample5, "src      : [\"input_preB\"]", "src      : [\"input_preA\"]"),
               "input_to_pre: " + y02 + "preprocess src =/= input_to_pre name"});
  c.push_back({"Y02PostSrc", replaced(kExample1, "src: [\"cnn_out\"]", "src: [\"out\"]"),
               "postprocess[0].src: " + y02 + "postprocess src =/= output_from_body name\nMake sure the postprocess "
               "\"src\" matches output_from_body \"name\"."});
  c.push_back({"Y02PostDest", replaced(kExample1, "dest: [\"post_out\"]", "dest: [\"prob\"]"),
               "postprocess[0].dest: " + y02 + "postprocessing dest =/= output_from_post name\nMake sure the postprocess "
               "\"dest\" matches output_from_post \"name\"."});
  c.push_back({"Y01PreDestMissesAnInput", replaced(kExample5, "dest     : [\"input_B\"]", "dest     : [\"input_A\"]"),
               "preprocess: [Error Y01] Error in prepost yaml file: set : preprocess dest must include all name(s) of onnx "
               "input node(s) listed below:\ninput_A\ninput_B\nMake sure that all of ONNX input node(s) name are already "
               "defined in preprocess \"dest\". (missing: input_B)"});
  c.push_back({"Y01PostSrcMissesAnOutput", replaced(kExample3, "src: [\"371\"]", "src: [\"391\"]"),
               "postprocess: [Error Y01] Error in prepost yaml file: postprocess src must include all name(s) of onnx "
               "output node(s) listed below:\n391\n371\noutput\nMake sure that all of ONNX output node(s) name are already "
               "defined in postprocess \"src\". (missing: 371)"});
  c.push_back({"Y03CropIncomplete",
               replaced(replaced(kExample4, "        shape_out : [200, 200]\n", ""), "        DATA_FORMAT : 0 # 0 : \"HWC\"\n", ""),
               "preprocess[0].operations[1] (crop).param: [Error Y03] Error in prepost yaml file: Incomplete param(s) "
               "definition in crop preprocess operation.\nPlease make sure the crop operation has all of the params listed "
               "below (case sensitive):\nCROP_POS_X\nCROP_POS_Y\nshape_out\nDATA_TYPE\nDATA_FORMAT\n\nPlease add the "
               "param(s) below to crop preprocess operation in prepost file:\nshape_out\nDATA_FORMAT\nMake sure that all "
               "of necessary params are defined"});
  c.push_back({"KeyErrorCofAdd", replaced(kExample1, "        cof_add: [-123.675, -116.28, -103.53]\n", ""),
               "KeyError: 'cof_add'\nMissing 'cof_add' parameter in preprocessing 'normalize'. Refer to the user's manual "
               "and add the parameter."});
  c.push_back({"KeyErrorCofMul", replaced(kExample1, "        cof_mul: [0.01712475, 0.017507, 0.01742919]\n", ""),
               "KeyError: 'cof_mul'\nMissing 'cof_mul' parameter in preprocessing 'normalize'."});

  // Structure.
  c.push_back({"InvalidYaml", "input_to_pre: [", "test.yaml: invalid YAML"});
  c.push_back({"TopLayerNotAMapping", "- a\n- b\n", "the top layer must be a mapping"});
  c.push_back({"UnknownTopKey", replaced(kExample5, "output_from_post:", "output_from_postt:"), "unknown key 'output_from_postt'"});
  {
    Def d;
    d.post_entries = " ";
    c.push_back({"MissingPostprocess", d.str(), "key 'postprocess' is missing"});
  }
  c.push_back({"DuplicateKey", replaced(kExample1, "    order: \"C\"\n    type: \"fp16\"", "    order: \"C\"\n    order: \"C\"\n    type: \"fp16\""),
               "output_from_body[0]: key 'order' is given twice"});
  c.push_back({"UnknownParam", replaced(kExample1, "DOUT_FORMAT: 1", "DOUT_FORMT: 1"),
               "postprocess[0].operations[0] (softmax).param: unknown parameter 'DOUT_FORMT' for postprocessing softmax"});
  c.push_back({"NameRequired", replaced(kExample1, "    name: \"post_out\"\n", ""), "output_from_post[0]: key 'name' is required"});
  c.push_back({"SrcIsAList", replaced(kExample1, "src: [\"pre_in\"]", "src: [\"pre_in\", \"x\"]"),
               "preprocess[0].src: must list exactly one name"});
  pre("EmptyOperations", {}, "preprocess[0].operations must be a non-empty list (specify memcopy if no preprocessing is required");
  pre("UnknownOp", {"{op: blur}"}, "preprocess[0].operations[0].op: 'blur' is not a known operation");
  pre("PostOpInPre", {kSoftmax32}, "'softmax' is a postprocessing operation, not a preprocessing one");

  // Keys and values of §5.2.
  pre("ShapeRank", {kYuv, kResize224, kCastU8, kNorm}, "input_to_pre[0].shape: shape [480, 640] has 2 dimension(s) but order HWC needs 3",
      "{name: pre_in, shape: [480, 640], order: HWC, format: YUY2, type: uint8}");
  pre("ShapeTooLarge", {kYuv}, "input_to_pre[0].shape: shape [4294967296, 4294967296, 2] is too large",
      "{name: pre_in, shape: [4294967296, 4294967296, 2], order: HWC, format: YUY2, type: uint8}");
  pre("Yuy2TwoChannels", {kYuv, kResize224, kCastU8, kNorm}, "in case of YUY2, only 2 channels can be specified",
      "{name: pre_in, shape: [480, 640, 3], order: HWC, format: YUY2, type: uint8}");
  pre("BodyInputType", {kYuv, kResize224, kCastU8, kNorm}, "input_to_body[0].type: 'uint8' is not allowed here (selectable values: fp16)",
      "", "{name: cnn_in, shape: [224, 224, 3], order: HWC, format: RGB, type: uint8}");
  pre("BodyInputFormat", {kYuv, kResize224, kCastU8, kNorm}, "input_to_body[0].format: 'YUY2' is not allowed here (selectable values: RGB | BGR | GRAY)",
      "", "{name: cnn_in, shape: [224, 224, 2], order: HWC, format: YUY2, type: fp16}");
  post("BodyOutputOrder", {kSoftmax32}, "output_from_body[0].order: 'CHW' is not allowed here (selectable values: HWC | C)",
       "{name: cnn_out, shape: [10, 10, 10], order: CHW, type: fp16}");
  post("OutputFormatKey", {kSoftmax32}, "output_from_post[0]: unknown key 'format'", "",
       "{name: post_out, shape: [1000], order: C, type: fp32, format: RGB}");

  // Order rules (§5.3.1 / §5.4.1).
  pre("PreOrder", {kResize224, kYuv, kCastU8, kNorm},
      "preprocess[0].operations[1] (conv_yuv2rgb): 'conv_yuv2rgb' cannot come after 'resize_hwc': preprocessing "
      "definitions must be specified in the order of the table in §5.3.1 (transpose, conv_yuv2rgb, conv_x2gray, crop, "
      "resize_hwc, cast_any_to_fp16, normalize, memcopy)");
  pre("PreTwice", {kYuv, kResize224, kResize224, kCastU8, kNorm}, "'resize_hwc' is given twice");
  pre("TransposeAndYuv", {"{op: transpose}", kYuv, kResize224, kCastU8, kNorm},
      "Can't specify both transpose and conv_yuv2rgb/conv_x2gray (§5.3.1)");
  post("PostOrder", {"{op: cast_fp16_fp32, param: {CAST_MODE: 0}}", "{op: transpose, param: {WORD_SIZE: 1, IS_CHW2HWC: 0}}"},
       "'transpose' cannot come after 'cast_fp16_fp32': postprocessing definitions must be specified in the order of the "
       "table in §5.4.1 (transpose, softmax, cast_fp16_fp32, argminmax, memcopy)");
  pre("NormalizeNeedsCast", {kNorm}, "preprocess[0].operations[0] (normalize): \"cast_any_to_fp16\" is required before "
      "\"normalize\" operation. The input data format to \"cast_any_to_fp16\" must be uint8 only",
      "{name: pre_in, shape: [224, 224, 3], order: HWC, format: RGB, type: fp16}");
  pre("NormalizeNeedsCastFromUint8", {"{op: cast_any_to_fp16, param: {DIN_FORMAT: 1}}", kNorm},
      "\"cast_any_to_fp16\" is required before \"normalize\" operation",
      "{name: pre_in, shape: [224, 224, 3], order: HWC, format: RGB, type: fp16}");

  // Type / order / format matching between operations and at the ends.
  pre("TypeMismatchMemcopy", {kYuv, kResize224, kMemcopy},
      "preprocess[0].operations[2] (memcopy) (input [224, 224, 3] HWC RGB uint8 from resize_hwc): memcopy takes fp16 input "
      "but receives uint8 (§5.3.1: the format of the output data of the previous operation and the format of the input "
      "data to the next operation must match)");
  pre("OrderMismatchTranspose", {"{op: transpose}", kCastU8}, "transpose takes CHW input but receives HWC data",
      "{name: pre_in, shape: [224, 224, 3], order: HWC, format: RGB, type: uint8}");
  pre("FormatMismatchAtBody", {"{op: conv_yuv2rgb, param: {DOUT_RGB_FORMAT: 1}}", kResize224, kCastU8, kNorm},
      "preprocess[0]: the operations produce format BGR but input_to_body 'cnn_in' declares format RGB (the last "
      "operation, normalize, outputs [224, 224, 3] HWC BGR fp16)");
  pre("ShapeMismatchAtBody", {kYuv, "{op: resize_hwc, param: {shape_out: [256, 256]}}", kCastU8, kNorm},
      "preprocess[0]: the operations produce shape [256, 256, 3] but input_to_body 'cnn_in' declares shape [224, "
      "224, 3]");
  post("TypeMismatchAtPostOut", {"{op: softmax}"}, "the operations produce type fp16 but output_from_post 'post_out' declares type fp32");
  post("OrderMismatchSoftmax", {kSoftmax32}, "softmax takes C input but receives HWC data of shape [13, 13, 125] (§5.4.1",
       "{name: cnn_out, shape: [13, 13, 125], order: HWC, type: fp16}");
  post("PostTypeMismatchMemcopy", {kSoftmax32, kMemcopy}, "memcopy takes fp16 input but receives fp32");
  {
    Def d;
    d.post_entries = "postprocess:\n  - {src: [cnn_out], dest: [post_out], operations: [" + kSoftmax32 + "]}\n"
                     "  - {src: [t1], dest: [t2], operations: [" + kMemcopy + "]}\n"
                     "  - {src: [t2], dest: [t1], operations: [" + kMemcopy + "]}\n";
    add("PostCycle", d, "postprocess[1]: postprocess entries read each other's dest in a cycle (src 't1')");
  }

  // Parameters and limitations, at least one per operation.
  pre("PreTransposeWordSize", {"{op: transpose, param: {WORD_SIZE: 1, IS_CHW2HWC: 1}}"},
      "preprocess[0].operations[0] (transpose).param.WORD_SIZE: 1 is not a valid WORD_SIZE for preprocessing transpose "
      "(§5.3.2 transpose: 0 (= \"1Byte\"))");
  pre("PreTransposeLimit", {"{op: transpose}", kCastU8},
      "transpose limitation violated: shape_in: width <= 65535, height <= 65535, ch <= 65535 (shape_in [3, 2, 70000] CHW: "
      "height 2, width 70000, ch 3; §5.3.2 transpose)",
      "{name: pre_in, shape: [3, 2, 70000], order: CHW, format: RGB, type: uint8}");
  pre("YuvOddWidth", {kYuv, kResize224, kCastU8, kNorm}, "conv_yuv2rgb limitation violated: shape_in: width % 2 == 0",
      "{name: pre_in, shape: [480, 641, 2], order: HWC, format: YUY2, type: uint8}");
  pre("YuvHeight", {kYuv, kResize224, kCastU8, kNorm}, "conv_yuv2rgb limitation violated: shape_in: 5 <= height <= 65535",
      "{name: pre_in, shape: [4, 640, 2], order: HWC, format: YUY2, type: uint8}");
  pre("YuvWidth", {kYuv, kResize224, kCastU8, kNorm}, "conv_yuv2rgb limitation violated: shape_in: 4 <= width <= 65535",
      "{name: pre_in, shape: [480, 2, 2], order: HWC, format: YUY2, type: uint8}");
  pre("YuvCode", {"{op: conv_yuv2rgb, param: {DIN_YUV_FORMAT: 5}}"}, "5 is not a valid DIN_YUV_FORMAT for preprocessing conv_yuv2rgb");
  pre("YuvDout", {"{op: conv_yuv2rgb, param: {DOUT_RGB_FORMAT: 2}}"}, "2 is not a valid DOUT_RGB_FORMAT");
  pre("GrayNeedsDinFormat", {"{op: conv_x2gray}"}, "KeyError: 'DIN_FORMAT'\nMissing 'DIN_FORMAT' parameter in preprocessing 'conv_x2gray'");
  pre("GrayFormat", {"{op: conv_x2gray, param: {DIN_FORMAT: 4096}}"}, "conv_x2gray: DIN_FORMAT 4096 takes RGB input, but the input is YUY2");
  pre("GrayOddWidth", {"{op: conv_x2gray, param: {DIN_FORMAT: 1}}"},
      "conv_x2gray limitation violated: shape_in: width % 2 == 0 when DIN_FORMAT != 4096 or 4097",
      "{name: pre_in, shape: [480, 641, 2], order: HWC, format: YUY2, type: uint8}");
  const std::string crop_in = "{name: pre_in, shape: [300, 400, 3], order: HWC, format: RGB, type: uint8}";
  pre("CropPosX", {"{op: crop, param: {CROP_POS_X: 400, CROP_POS_Y: 0, shape_out: [1, 1], DATA_TYPE: 0, DATA_FORMAT: 0}}"},
      "crop limitation violated: CROP_POS_X <= width of shape_in - 1 (CROP_POS_X 400", crop_in);
  pre("CropPosY", {"{op: crop, param: {CROP_POS_X: 0, CROP_POS_Y: 300, shape_out: [1, 1], DATA_TYPE: 0, DATA_FORMAT: 0}}"},
      "crop limitation violated: CROP_POS_Y <= height of shape_in - 1", crop_in);
  pre("CropOutside", {"{op: crop, param: {CROP_POS_X: 300, CROP_POS_Y: 0, shape_out: [224, 224], DATA_TYPE: 0, DATA_FORMAT: 0}}"},
      "crop limitation violated: the cropped image must lie inside the input", crop_in);
  pre("CropDataType", {"{op: crop, param: {CROP_POS_X: 0, CROP_POS_Y: 0, shape_out: [224, 224], DATA_TYPE: 1, DATA_FORMAT: 0}}"},
      "crop: DATA_TYPE 1 (2 bytes) does not match the input type uint8", crop_in);
  pre("CropDataFormat", {"{op: crop, param: {CROP_POS_X: 0, CROP_POS_Y: 0, shape_out: [224, 224], DATA_TYPE: 0, DATA_FORMAT: 1}}"},
      "crop: DATA_FORMAT 1 (\"CHW\") does not match the input order HWC", crop_in);
  pre("ResizeOutSize", {kYuv, "{op: resize_hwc, param: {shape_out: [2, 224]}}"},
      "resize_hwc limitation violated: shape_out: (width > 2) && (height > 2) (shape_out [2, 224]");
  pre("ResizeChannels", {"{op: resize_hwc, param: {DATA_TYPE: 1, shape_out: [8, 8]}}"},
      "resize_hwc limitation violated: shape_in: ch <= 4096",
      "{name: pre_in, shape: [10, 10, 5000], order: HWC, format: RGB, type: fp16}");
  pre("ResizeDataType", {kYuv, "{op: resize_hwc, param: {DATA_TYPE: 1, shape_out: [224, 224]}}"},
      "resize_hwc: DATA_TYPE 1 (\"fp16\") does not match the input type uint8");
  pre("ResizeNeedsShapeOut", {kYuv, "{op: resize_hwc, param: {RESIZE_ALG: 1}}"}, "KeyError: 'shape_out'");
  pre("CastDinFormat", {kYuv, kResize224, "{op: cast_any_to_fp16, param: {DIN_FORMAT: 2}}"},
      "cast_any_to_fp16: DIN_FORMAT says fp32 but the input type is uint8");
  pre("CastLimit", {"{op: cast_any_to_fp16, param: {DIN_FORMAT: 2}}"},
      "cast_any_to_fp16 limitation violated: shape_in: (width * ch) < 32'hFFFF_FFFF",
      "{name: pre_in, shape: [1, 1431655765, 3], order: HWC, format: RGB, type: fp32}");
  pre("NormalizeCoefficients", {kYuv, kResize224, kCastU8,
                                "{op: normalize, param: {DOUT_RGB_ORDER: 0, cof_add: [0, 0], cof_mul: [1, 1]}}"},
      "normalize: cof_add and cof_mul need one value per channel (3), got 2 and 2");
  pre("NormalizeSwapGray", {"{op: conv_x2gray, param: {DIN_FORMAT: 0}}", kCastU8,
                            "{op: normalize, param: {DOUT_RGB_ORDER: 1, cof_add: [0], cof_mul: [1]}}"},
      "normalize: DOUT_RGB_ORDER 1 swaps the R and B channels of RGB or BGR input, but the input format is GRAY");
  pre("NormalizeNeedsOrder", {kYuv, kResize224, kCastU8, "{op: normalize, param: {cof_add: [0, 0, 0], cof_mul: [1, 1, 1]}}"},
      "KeyError: 'DOUT_RGB_ORDER'");
  pre("MemcopyWordSize", {"{op: memcopy, param: {WORD_SIZE: 1}}"}, "1 is not a valid WORD_SIZE for preprocessing memcopy",
      "{name: pre_in, shape: [224, 224, 3], order: HWC, format: RGB, type: fp16}");
  post("PostTransposeWordSize", {"{op: transpose, param: {WORD_SIZE: 0, IS_CHW2HWC: 0}}"},
       "0 is not a valid WORD_SIZE for postprocessing transpose (§5.4.2 transpose: 1 (= \"2Byte\"))",
       "{name: cnn_out, shape: [13, 13, 125], order: HWC, type: fp16}");
  post("PostTransposeDirection", {"{op: transpose, param: {IS_CHW2HWC: 1}}"}, "1 is not a valid IS_CHW2HWC for postprocessing transpose");
  post("PostTransposeOrder", {"{op: transpose}"}, "transpose takes HWC input but receives C data");
  post("PostTransposeLimit", {"{op: transpose}"}, "transpose limitation violated: shape_in: width <= 65535, height <= 65535, ch <= 65535",
       "{name: cnn_out, shape: [1, 70000, 2], order: HWC, type: fp16}");
  post("SoftmaxLimit", {kSoftmax32}, "softmax limitation violated: shape_in: 1 <= ch <= 16384",
       "{name: cnn_out, shape: [20000], order: C, type: fp16}", "{name: post_out, shape: [20000], order: C, type: fp32}");
  post("SoftmaxFormat", {"{op: softmax, param: {DOUT_FORMAT: 2}}"}, "2 is not a valid DOUT_FORMAT for postprocessing softmax");
  post("CastModeMismatch", {"{op: cast_fp16_fp32, param: {CAST_MODE: 1}}"},
       "cast_fp16_fp32: CAST_MODE 1 (\"FP32 to FP16\") takes fp32 input but receives fp16");
  post("PostCastLimit", {"{op: cast_fp16_fp32}"}, "cast_fp16_fp32 limitation violated: shape_in: (width * height * ch) <= 32'hFFFF_FFFF",
       "{name: cnn_out, shape: [65536, 65536, 2], order: HWC, type: fp16}");
  post("ArgmaxChannels", {"{op: argminmax, param: {DIN_FORMAT: 0, DOUT_TYPE: 0, AXIS: 0, ARG_MODE: 0}}"},
       "argminmax limitation violated: shape_in: AXIS == 0 && ch <= 256",
       "{name: cnn_out, shape: [13, 13, 300], order: HWC, type: fp16}");
  post("ArgmaxHeight", {"{op: argminmax, param: {DIN_FORMAT: 0, DOUT_TYPE: 0, AXIS: 2, ARG_MODE: 0}}"},
       "argminmax limitation violated: shape_in: AXIS == 2 && height <= 256",
       "{name: cnn_out, shape: [300, 13, 3], order: HWC, type: fp16}");
  post("ArgmaxDinFormat", {"{op: argminmax, param: {DIN_FORMAT: 1, DOUT_TYPE: 0, AXIS: 0, ARG_MODE: 0}}"},
       "argminmax: DIN_FORMAT 1 (\"CHW\") does not match the input order HWC",
       "{name: cnn_out, shape: [13, 13, 3], order: HWC, type: fp16}");
  post("ArgmaxNeedsMode", {"{op: argminmax, param: {DIN_FORMAT: 0, DOUT_TYPE: 0, AXIS: 0}}"},
       "KeyError: 'ARG_MODE'\nMissing 'ARG_MODE' parameter in postprocessing 'argminmax'",
       "{name: cnn_out, shape: [13, 13, 3], order: HWC, type: fp16}");
  post("PostMemcopyWordSize", {"{op: memcopy, param: {WORD_SIZE: 3}}"}, "3 is not a valid WORD_SIZE for postprocessing memcopy");
  return c;
}

class PrePostInvalid : public ::testing::TestWithParam<BadCase> {};

TEST_P(PrePostInvalid, GivesTheDocumentedError) {
  std::string msg = errorOf(GetParam().yaml);
  ASSERT_FALSE(msg.empty()) << "parsed without error:\n" << GetParam().yaml;
  EXPECT_NE(msg.find(GetParam().expect), std::string::npos) << "expected: " << GetParam().expect << "\ngot: " << msg;
  EXPECT_EQ(msg.rfind("test.yaml: ", 0), 0u) << msg;
}

INSTANTIATE_TEST_SUITE_P(Table, PrePostInvalid, ::testing::ValuesIn(badCases()),
                         [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

// ---- size of ONNX vs. YAML ----

TEST(PrePostSize, OnnxVsYaml) {
  PrePost pp = parsePrePost(kExample2, "example2.yaml");
  // NCHW with N = 1 → HWC; NHWC accepted; unknown dimensions match.
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(pp, {{"cnn_in", {1, 3, 416, 416}}}, {{"cnn_out", {1, 125, 13, 13}}}));
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(pp, {{"cnn_in", {1, 416, 416, 3}}}, {{"cnn_out", {-1, 125, 13, 13}}}));
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(pp, {{"cnn_in", {0, 3, 0, 0}}}, {{"cnn_out", {1, 125, 13, 13}}}));
  PrePost p1 = parsePrePost(kExample1, "example1.yaml");
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(p1, {{"cnn_in", {1, 3, 224, 224}}}, {{"cnn_out", {1, 1000}}}));
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(p1, {{"cnn_in", {1, 3, 224, 224}}}, {{"cnn_out", {1000}}}));
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(p1, {{"cnn_in", {1, 3, 224, 224}}}, {{"cnn_out", {1, 1000, 1, 1}}}));
  EXPECT_THROW(checkSizeOnnxVsYaml(p1, {{"cnn_in", {2, 3, 224, 224}}}, {{"cnn_out", {1, 1000}}}), Error);  // N = 2
  try {
    checkSizeOnnxVsYaml(pp, {{"cnn_in", {1, 3, 224, 224}}}, {{"cnn_out", {1, 125, 13, 13}}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "example2.yaml: input_to_body[0] 'cnn_in': the size of ONNX vs. YAML does not match: the YAML shape is "
              "[416, 416, 3] (HWC), the ONNX input has shape [1, 3, 224, 224], i.e. [224, 224, 3] in YAML order (NCHW "
              "with N = 1 is written HWC in the YAML, Appendix B). Fix the YAML, or skip this check with "
              "-NotCheckSizeONNXvsYAML");
  }
  EXPECT_THROW(checkSizeOnnxVsYaml(p1, {{"cnn_in", {1, 3, 224, 224}}}, {{"cnn_out", {1, 1001}}}), Error);
  // -NotCheckSizeONNXvsYAML
  EXPECT_NO_THROW(checkSizeOnnxVsYaml(pp, {{"cnn_in", {1, 3, 224, 224}}}, {{"cnn_out", {1, 255, 13, 13}}}, true));
  // A YAML name the model lacks.
  try {
    checkSizeOnnxVsYaml(pp, {{"images", {1, 3, 416, 416}}}, {{"cnn_out", {1, 125, 13, 13}}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Error(DRP Converter-007)] Node cnn_in is not found."), std::string::npos) << e.what();
  }
}
