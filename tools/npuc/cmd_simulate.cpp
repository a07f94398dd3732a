// npuc simulate: runs an object package on the simulated device (npuc::Runtime) and writes its outputs, and with
// --trace every layer's output, TIDL-style (trace_dump_<i>_<W>x<H>.y) plus .npy, with an index file.
#include "cli_common.hpp"

#include "npuc/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <optional>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

/// The layer whose int8 codes stand for the model tensor `name` (scale > 0: int8-affine / int8-radix), or nullptr.
const RuntimeLayer* codesStandingFor(const Runtime& rt, const std::string& name) {
  for (const RuntimeLayer& l : rt.layers())
    if (l.scale > 0 && l.float_value == name) return &l;
  return nullptr;
}

/// The bytes of a regular file of exactly `bytes` bytes (else an error naming the file, `who` needs them, `detail`).
std::vector<uint8_t> readExactly(const std::string& file, uint64_t bytes, const std::string& who, const std::string& detail) {
  const fs::path p(file);
  std::error_code ec;
  auto status = fs::status(p, ec);
  if (!fs::exists(status)) throw Error(ErrorCode::kIo, fmt::format("{}: file not found", file));
  if (!fs::is_regular_file(status)) throw Error(ErrorCode::kIo, fmt::format("{}: is not a regular file", file));
  uintmax_t size = fs::file_size(p, ec);
  if (ec || size != bytes)
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: {} needs exactly {} bytes{}, the file has {}", file, who, bytes, detail, size));
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open: {}", file, std::strerror(errno)));
  size_t got = std::fread(data.data(), 1, data.size(), f);
  std::fclose(f);
  if (got != data.size()) throw Error(ErrorCode::kIo, fmt::format("{}: read {} of {} bytes", file, got, data.size()));
  return data;
}

/// An RGBA8888 dump (npuc.utils.convert_pre_numpy_to_rgba, Kneron's CSIM input) for an input [1, C, H, W], C <= 4:
/// H x W pixels of 4 bytes, the first C the channels. Where the package quantizes that input (int8-radix,
/// int8-affine: the layer whose codes stand for it) the bytes are its int8 codes, given as the real values they stand
/// for, (q - zero_point) x scale, which that layer turns back into the same codes; otherwise uint8 pixel values.
Tensor readRgbaInput(const Runtime& rt, const std::string& file, const RuntimeTensor& in) {
  const Shape& s = in.shape;
  if (s.size() != 4 || s[0] != 1 || s[1] < 1 || s[1] > 4)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: an RGBA8888 file is for an input [1, C, H, W] with 1 to 4 channels; "
                                                         "input '{}' is {}", file, in.name, shapeStr(s)));
  const int64_t c = s[1], h = s[2], w = s[3];
  const std::vector<uint8_t> px = readExactly(file, static_cast<uint64_t>(h * w * 4), "input '" + in.name + "'",
                                              fmt::format(" ({}x{} pixels, RGBA8888)", h, w));
  const RuntimeLayer* quant = codesStandingFor(rt, in.name);
  if (!quant && in.dtype == DType::kU8) {
    Tensor t(DType::kU8, s);
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < h * w; ++i) t.data<uint8_t>()[k * h * w + i] = px[static_cast<size_t>(i * 4 + k)];
    return t;
  }
  if (!isFloat(in.dtype))
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: input '{}' is {}; an RGBA8888 file gives uint8 pixels or int8 codes",
                                                         file, in.name, dtypeName(in.dtype)));
  Tensor t(DType::kF32, s);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t i = 0; i < h * w; ++i) {
      const uint8_t b = px[static_cast<size_t>(i * 4 + k)];
      t.data<float>()[k * h * w + i] = quant ? static_cast<float>((static_cast<int8_t>(b) - quant->zero_point) * quant->scale)
                                             : static_cast<float>(b);
    }
  return t;
}

Tensor readInputFile(const Runtime& rt, const std::string& file, const RuntimeTensor& in) {
  fs::path p(file);
  if (p.extension() == ".npy") return readNpyFile(file);
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") return rt.imageInput(in.name, p);
  if (ext == ".rgba") return readRgbaInput(rt, file, in);
  if (p.extension() == ".bin" || p.extension() == ".raw") {
    Tensor t(in.dtype, in.shape);
    // The frame of a dynamic AIPP stage may be smaller than max_src_image_size per image (docs/aipp.md): N images of
    // size / N bytes each; the runtime checks them against the parameter block.
    const bool aipp_frame = std::any_of(rt.inputs().begin(), rt.inputs().end(),
                                        [&](const RuntimeTensor& r) { return r.aipp_for == in.name; });
    std::error_code ec;
    const uintmax_t size = fs::is_regular_file(p, ec) ? fs::file_size(p, ec) : 0;
    if (!ec && aipp_frame && in.shape.size() == 2 && in.shape[0] > 0 && size > 0 && size < t.nbytes() &&
        size % static_cast<uintmax_t>(in.shape[0]) == 0)
      t = Tensor(in.dtype, {in.shape[0], static_cast<int64_t>(size / static_cast<uintmax_t>(in.shape[0]))});
    const std::vector<uint8_t> bytes =
        readExactly(file, t.nbytes(), "input '" + in.name + "'",
                    fmt::format(" ({} {}{})", dtypeName(in.dtype), shapeStr(in.shape),
                                aipp_frame ? fmt::format(", or N = {} images of fewer bytes each", in.shape[0]) : ""));
    std::memcpy(t.raw(), bytes.data(), bytes.size());
    return t;
  }
  throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: inputs are .npy, raw .bin, .rgba (RGBA8888 dumps: npuc.utils.convert_pre_numpy_to_rgba), or (camera-frame inputs) .jpg/.png files", file));
}

}  // namespace

/// The file base name of each output of `rt` (outputs() order): distinct, with the suffixes simulate and its CSIM dumps
/// add to them (<base>.npy, <base>.raw.npy, <base>_fixed.txt, <base>_dma2seq.info).
std::vector<std::string> outputFileNames(const Runtime& rt) {
  std::vector<std::string> names;
  for (const RuntimeTensor& out : rt.outputs()) names.push_back(out.name);
  return safeFileNames(names, {".npy", ".raw.npy", "_fixed.txt", "_dma2seq.info"});
}

std::map<std::string, Tensor> packageInputs(const Runtime& rt, const std::vector<std::string>& entries,
                                            const std::set<std::string>& given_elsewhere) {
  std::map<std::string, Tensor> out;
  for (auto& e : entries) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size())
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--input '{}': expected name=file", e));
    std::string name = e.substr(0, eq);
    out[name] = readInputFile(rt, e.substr(eq + 1), packageInput(rt, name, "--input '" + e + "'"));
  }
  for (auto& r : rt.inputs()) {
    if (out.count(r.name) || given_elsewhere.count(r.name)) continue;
    if (!r.aipp_for.empty())
      throw Error(ErrorCode::kInvalidArgument, fmt::format("missing --aipp {}=PARAMS.bin|yaml (the dynamic AIPP parameter block "
                                                           "of input '{}')", r.aipp_for, r.aipp_for));
    throw Error(ErrorCode::kInvalidArgument, fmt::format("missing --input {}=FILE", r.name));
  }
  return out;
}

Tensor toFloat(const Tensor& t) {
  if (t.dtype() == DType::kF32) return t;
  Tensor f(DType::kF32, t.shape());
  auto v = t.toDouble();  // exact for float16
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
  return f;
}

/// The radix of an output of an int8-radix package: from the record of the int8 codes the output dequantizes (scale
/// 2^-radix, zero point 0; the reader checked the form); empty for an output without one (a float output: translate's
/// radix_scale_info.txt says "float" too).
std::optional<int> outputRadix(const Runtime& rt, const std::string& output) {
  const RuntimeLayer* l = codesStandingFor(rt, output);
  if (!l) return std::nullopt;
  int e = 0;
  std::frexp(l->scale, &e);
  return 1 - e;  // scale = 2^(e - 1) = 2^-radix
}

/// What --kneron-dump needs, checked before the run: an int8-radix package, outputs of rank 4 at most.
void checkKneronDump(const Runtime& rt) {
  if (rt.numerics() != "int8-radix")
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--kneron-dump needs an int8-radix package (target kneron); this one is {}", rt.numerics()));
  for (const RuntimeTensor& out : rt.outputs())
    if (out.shape.size() > 4)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--kneron-dump: output '{}' has rank {}; the CSIM layouts are for [N, C, H, W]",
                                                           out.name, out.shape.size()));
}

/// Kneron's CSIM output files (the E2E simulator guide, seed 003): per output `<name>_fixed.txt`, its fixed-point
/// values one per line in the 520's (h, c, w_align16) or the 720's (c, h, w_align16) order — the width padded to a
/// multiple of 16 with zeros — and the radix and scale of each output (float = fixed / scale / 2^radix): one
/// radix_scale_info.txt for the 520, a `<name>_dma2seq.info` per output for the 720. The layout of these two files is
/// npuc's (the guide names them without their format): "<name> <radix> <scale>" lines, and "radix R" / "scale S".
void writeKneronDump(const Runtime& rt, int platform, const fs::path& dir) {
  makeOutputFolder(dir, "--kneron-dump");
  std::string info = "# output radix scale (float = fixed / scale / 2^radix)\n";
  const std::vector<std::string> files = outputFileNames(rt);
  for (size_t i = 0; i < rt.outputs().size(); ++i) {
    const RuntimeTensor& out = rt.outputs()[i];
    const std::optional<int> r = outputRadix(rt, out.name);
    if (!r) {  // a float output: no fixed-point values
      info += fmt::format("{} float\n", out.name);
      if (platform == 720) writeText(dir / (files[i] + "_dma2seq.info"), "float\n");
      continue;
    }
    const int radix = *r;
    Tensor f = rt.outputFloat(out.name);
    const Shape& s = f.shape();
    // [N, C, H, W] (N = 1 per image, images one after another); lower ranks: [N, C] -> C x 1 x 1.
    const int64_t N = s.empty() ? 1 : s[0], C = s.size() >= 2 ? s[1] : 1, H = s.size() >= 4 ? s[s.size() - 2] : 1,
                  W = s.size() >= 3 ? s.back() : 1;
    const int64_t Wa = (W + 15) / 16 * 16;
    std::string text;
    auto fixed = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      return std::lround(std::ldexp(static_cast<double>(f.data<float>()[((n * C + c) * H + h) * W + w]), radix));
    };
    for (int64_t n = 0; n < N; ++n)
      for (int64_t a = 0; a < (platform == 520 ? H : C); ++a)
        for (int64_t b = 0; b < (platform == 520 ? C : H); ++b)
          for (int64_t w = 0; w < Wa; ++w)
            text += fmt::format("{}\n", w < W ? (platform == 520 ? fixed(n, b, a, w) : fixed(n, a, b, w)) : 0L);
    const std::string& base = files[i];
    writeText(dir / (base + "_fixed.txt"), text);
    if (platform == 720) writeText(dir / (base + "_dma2seq.info"), fmt::format("radix {}\nscale 1\n", radix));
    info += fmt::format("{} {} 1\n", out.name, radix);
  }
  if (platform == 520) writeText(dir / "radix_scale_info.txt", info);
}

void addSimulate(Command& app, Action& run) {
  auto* c = app.subcommand("simulate", "Run an object package on the simulated device (bit-exact to its numerics)");
  addCustomOpOption(c);
  struct Opts {
    std::string package, output_dir = "sim_out", trace, image_size, kneron_dir;
    int64_t batch = 0, model_id = -1;
    int kneron = 0;
    std::vector<std::string> inputs, aipp;
    int threads = 1, top = 0;
    bool exact = false;
  };
  auto o = std::make_shared<Opts>();
  c->option("package", o->package, "Package folder (output/PREFIX), or the package reference tidl-import writes at outputNetFile")->required();
  c->option("--input", o->inputs, "Input: name=file.npy (float32 or the device type), name=file.bin (raw device bytes), or for a camera-frame input name=photo.jpg|png (converted to the frame's format and size)");
  c->option("--aipp", o->aipp, "Dynamic AIPP parameters: name=params.bin (the kAippDynamicPara bytes) or name=params.yaml (the "
                                   "seed's field names; docs/aipp.md), name = the frame input; once per frame input (a model with two AIPP "
                                   "inputs takes two)")->noExtraArgs();
  c->option("--dynamic-batch-size,--dynamic_batch_size", o->batch,
                "Packages with batch gears (translate --dynamic_batch_size): run the gear of this batch size")
      ->range(int64_t{1}, int64_t{65536});
  c->option("--dynamic-image-size,--dynamic_image_size", o->image_size,
                "Packages with image-size gears (translate --dynamic_image_size): run the gear of this HEIGHT,WIDTH");
  c->option("--model-id", o->model_id, "A bundle of models (npuc bundle; Kneron's model_id): run the model of this id")
      ->range(int64_t{0}, int64_t{2147483647});
  c->option("--kneron-dump", o->kneron, "int8-radix packages (target kneron): also write the outputs as Kneron's CSIM does "
                                           "for this platform, 520 or 720 (fixed-point values in its layout, radix and scale), "
                                           "into --kneron-dir")
      ->oneOf({"520", "720"});
  c->option("--kneron-dir", o->kneron_dir, "Folder for --kneron-dump (default: OUTPUT_DIR/kneron_<platform>)");
  c->option("--output-dir,-o", o->output_dir, "Where outputs go: NAME.npy (float32) and NAME.raw.npy (device type)");
  c->option("--trace", o->trace, "Also write every layer's output to this folder (trace_dump_<i>_<W>x<H>.y as stored — int8 codes in "
                                     "int8 packages —, trace_<i>.npy as real values, trace_index.csv with each int8 layer's scale and zero point, and q in int8-pow2 packages)");
  c->option("--threads,-t", o->threads, "Worker threads")->range(1, 256);
  c->flag("--exact", o->exact, "Run the reference kernels (the specification; int8 convolutions: the portable path, "
                                   "tested equal to it; same bits, slower)");
  c->option("--top", o->top, "Also print the K largest values of each output with their indices (classification)")
      ->range(1, 1000);
  c->callback([o, &run] {
    run = [o] {
      const std::filesystem::path folder = packageFolder(o->package, "package");
      Runtime rt(o->model_id >= 0 ? bundleModel(folder, o->model_id) : folder, {o->threads, o->exact});
      // A package with gears: the gear first (the inputs, AIPP stages and layers are the gear's).
      if (o->kneron) checkKneronDump(rt);
      else if (!o->kneron_dir.empty())
        throw Error(ErrorCode::kInvalidArgument, "--kneron-dir is the folder of --kneron-dump 520|720, which is not given");
      if (o->batch) rt.setDynamicBatchSize(o->batch);
      if (!o->image_size.empty()) {
        const size_t comma = o->image_size.find(',');
        char* e1 = nullptr;
        char* e2 = nullptr;
        const long long h = std::strtoll(o->image_size.c_str(), &e1, 10);
        const long long w = comma == std::string::npos ? 0 : std::strtoll(o->image_size.c_str() + comma + 1, &e2, 10);
        if (comma == std::string::npos || e1 != o->image_size.c_str() + comma || !e2 || *e2 != '\0' || h < 1 || w < 1)
          throw Error(ErrorCode::kInvalidArgument, fmt::format("--dynamic-image-size '{}': expected HEIGHT,WIDTH", o->image_size));
        rt.setDynamicHWSize(h, w);
      }
      if (!rt.gears().empty() && !o->batch && o->image_size.empty())
        fmt::print("package with {} {} gears: running the first (select one with --dynamic-{}-size)\n", rt.gears().size(),
                   rt.gearKind() == "batch" ? "batch" : "image-size", rt.gearKind() == "batch" ? "batch" : "image");
      std::set<std::string> by_aipp;
      for (const auto& [name, block] : parseAippParams(o->aipp)) {
        rt.setDynamicAipp(name, block);
        for (auto& r : rt.inputs())
          if (r.aipp_for == name || (r.name == name && !r.aipp_for.empty())) by_aipp.insert(r.name);
      }
      auto inputs = packageInputs(rt, o->inputs, by_aipp);
      for (auto& [name, t] : inputs) rt.setInput(name, t);
      std::string index;
      LayerCallback cb;
      std::set<int> traced;  // the layers traced (a control layer's regions run inside it: not traced themselves)
      if (!o->trace.empty()) {
        makeOutputFolder(o->trace, "--trace");
        index = "index,seq,engine,kind,name,opexp,onnx_nodes,output,dtype,shape,raw_file,npy_file,scale,zero_point,float_value,q,clipped\n";
        cb = [&, pow2 = rt.numerics() == "int8-pow2"](const RuntimeLayer& l, const Tensor& y) {  // (runs after this block)
          traced.insert(l.seq);
          const Shape& s = y.shape();
          int64_t w = s.size() >= 1 ? s.back() : 1, h = s.size() >= 2 ? s[s.size() - 2] : 1;
          if (l.output.channel_last) w = s[s.size() - 2], h = s.size() >= 4 ? s[s.size() - 3] : 1;  // ([N, H, W, C])
          // (a layer of several outputs: output k > 0 of layer seq is "seq_outK")
          const std::string id = l.output_index ? fmt::format("{}_out{}", l.seq, l.output_index) : std::to_string(l.seq);
          std::string raw = fmt::format("trace_dump_{}_{}x{}.y", id, w, h), npy = fmt::format("trace_{}.npy", id);
          std::FILE* f = std::fopen((fs::path(o->trace) / raw).c_str(), "wb");
          if (!f || std::fwrite(y.raw(), 1, y.nbytes(), f) != y.nbytes()) {
            if (f) std::fclose(f);
            throw Error(ErrorCode::kIo, fmt::format("{}: cannot write", (fs::path(o->trace) / raw).string()));
          }
          std::fclose(f);
          // (int8 codes: the .y file holds them, the .npy the real values they stand for at this frame's scale)
          const double scale = rt.outputScale(l.seq);
          writeNpyFile((fs::path(o->trace) / npy).string(), toFloat(realValues(l, y, scale)));
          std::string nodes;
          for (auto& n : l.onnx_nodes) nodes += (nodes.empty() ? "" : " ") + n;
          // (int8-pow2: the scale is 2^-q, q this frame's, also given as q)
          const int64_t clipped = rt.clippedInputs(l.seq);
          index += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", l.seq, l.seq, l.engine, l.kind, csvField(l.name),
                               csvField(l.opexp), csvField(nodes), csvField(l.output.name), dtypeName(l.output.dtype), shapeStr(s),
                               raw, npy, scale > 0 ? fmt::format("{:.9g}", scale) : "", scale > 0 ? std::to_string(l.zero_point) : "",
                               csvField(l.float_value), pow2 && scale > 0 ? std::to_string(-std::ilogb(scale)) : "",
                               clipped > 0 ? std::to_string(clipped) : "");
        };
      }
      double t0 = nowMs();
      rt.run(cb);
      double t1 = nowMs();
      warnClippedInputs(rt, "npuc simulate");
      makeOutputFolder(o->output_dir, "--output-dir");
      const std::vector<std::string> files = outputFileNames(rt);
      for (size_t i = 0; i < rt.outputs().size(); ++i) {
        const RuntimeTensor& out = rt.outputs()[i];
        std::string base = (fs::path(o->output_dir) / files[i]).string();
        const Tensor written = rt.outputFloat(out.name);  // (a dynamic output at this run's dims, not its capacity)
        writeNpyFile(base + ".npy", written);
        if (out.dtype != DType::kF32) writeNpyFile(base + ".raw.npy", rt.output(out.name));
        fmt::print("{} {} {}{} -> {}.npy\n", out.name, dtypeName(out.dtype), shapeStr(written.shape()),
                   out.dynamic ? fmt::format(" (capacity {})", shapeStr(out.shape)) : "", base);
        if (o->top > 0) {
          Tensor f = rt.outputFloat(out.name);
          std::vector<int64_t> idx(static_cast<size_t>(f.numel()));
          for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
          const float* v = f.data<float>();
          size_t k = std::min(idx.size(), static_cast<size_t>(o->top));
          auto key = [&](int64_t i) { return std::isnan(v[i]) ? -INFINITY : v[i]; };  // NaN last: a strict order
          std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                            [&](int64_t a, int64_t b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
          for (size_t i = 0; i < k; ++i) fmt::print("  top {}: index {} = {:.6g}\n", i + 1, idx[i], v[idx[i]]);
        }
      }
      if (o->kneron) {
        fs::path dir = o->kneron_dir.empty() ? fs::path(o->output_dir) / fmt::format("kneron_{}", o->kneron) : fs::path(o->kneron_dir);
        writeKneronDump(rt, o->kneron, dir);
        fmt::print("Kneron {} dump: {}\n", o->kneron, dir.string());
      }
      if (!o->trace.empty()) {
        std::FILE* f = std::fopen((fs::path(o->trace) / "trace_index.csv").c_str(), "wb");
        if (!f) throw Error(ErrorCode::kIo, fmt::format("{}: cannot write trace_index.csv", o->trace));
        std::fwrite(index.data(), 1, index.size(), f);
        std::fclose(f);
        fmt::print("traces: {} layers in {}{}\n", traced.size(), o->trace,
                   traced.size() < rt.layers().size() ? " (the layers of control layers' regions are not traced)" : "");
      }
      fmt::print("package {} ({} {}, {} layers) ran in {:.3f} ms ({} mode, {} thread{})\n", o->package, rt.target(), rt.numerics(),
                 rt.layers().size(), t1 - t0, o->exact ? "exact" : "fast", o->threads, o->threads > 1 ? "s" : "");
      return 0;
    };
  });
}

}  // namespace npuc::cli
