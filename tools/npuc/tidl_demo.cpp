// The TIDL demos' frames and runtime (tidl_demo.hpp).
#include "tidl_demo.hpp"

#include "cli_common.hpp"
#include "tidl_frames.hpp"
#include "video_frames.hpp"

#include "npuc/error.hpp"
#include "npuc/io.hpp"
#include "npuc/model.hpp"

#include <fmt/format.h>
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

/// The pictures of -i: a picture, the pictures of a folder (by name), or a .txt list (paths relative to it).
std::vector<fs::path> pictures(const std::string& input) {
  std::error_code ec;
  std::vector<fs::path> out;
  if (fs::is_directory(input, ec)) {
    for (const auto& e : fs::directory_iterator(input, ec)) {
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (e.is_regular_file(ec) && (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".pgm" || ext == ".ppm"))
        out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    if (out.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("-i {}: no pictures in the folder (PNG, JPEG, BMP, PGM, PPM)", input));
    return out;
  }
  if (fs::path(input).extension() == ".txt") {
    for (const std::string& l : readLines(input, "a list of pictures")) {
      const fs::path p(l);
      out.push_back(p.is_absolute() ? p : fs::path(input).parent_path() / p);
    }
    if (out.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("-i {}: the list names no picture", input));
    return out;
  }
  out.push_back(input);
  return out;
}

}  // namespace

std::vector<std::string> readLines(const std::string& file, const char* what) {
  return listLines(readFileText(file, 16u << 20, what));
}

void addDemoOptions(Command* c, DemoOptions& o) {
  c->option("package", o.package, "The package folder, or tidl-import's reference at outputNetFile")->required();
  c->option("-i,--input", o.input, "A picture, a folder of pictures (by name), a .txt list of them, or a video clip (.mp4, "
                                    ".avi, .mkv, .mov, .webm, .mjpg; decoded by OpenCV where npuc is built with its videoio): "
                                    "the frames")->required();
  c->option("--frames", o.max_frames, "A video: the first N frames (default: all)")->range(int64_t{1}, int64_t{1} << 40);
  c->option("-l,--labels", o.labels, "The label of every class, one a line (the demo's imagenet.txt); default: class numbers");
  c->option("--output", o.output, "The output read (default: the package's first)");
  c->option("--preProcType,--pre-proc-type", o.pre_proc_type, "The guide's pre-processing of each picture (the import tool's "
                                                                  "table: 0..6, 256 with --inMean / --inScale; default: the "
                                                                  "import's, as its package reference records it, else 0)");
  c->option("--inMean,--in-mean", o.mean, "preProcType 256: per channel")->expected(1, 4);
  c->option("--inScale,--in-scale", o.scale, "preProcType 256: per channel")->expected(1, 4);
  c->option("-t,--threads", o.threads, "Threads of the simulated device")->range(1, 256);
}

std::string Demo::name(int64_t c) const { return labels.empty() ? std::to_string(c) : labels[static_cast<size_t>(c)]; }

Demo openDemo(DemoOptions& o, const char* what) {
  std::map<std::string, std::string> ref;  // (tidl-import's reference: how its calibration pictures were pre-processed)
  Demo d;
  d.rt = std::make_unique<Runtime>(packageFolder(o.package, "package", &ref), RuntimeOptions{o.threads, false});
  auto numbers = [](const std::string& s) {
    std::vector<double> v;
    std::istringstream in(s);
    for (double x; in >> x;) v.push_back(x);
    return v;
  };
  if (o.pre_proc_type < 0) {  // (the import's pre-processing unless told otherwise; else the guide's default 0)
    o.pre_proc_type = ref.count("preProcType") ? std::stoi(ref.at("preProcType")) : 0;
    if (o.mean.empty() && ref.count("inMean")) o.mean = numbers(ref.at("inMean"));
    if (o.scale.empty() && ref.count("inScale")) o.scale = numbers(ref.at("inScale"));
  }
  if (d.rt->inputs().size() != 1 || d.rt->outputs().empty())
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: a {} package has one input, it has {}", o.package, what, d.rt->inputs().size()));
  d.in = d.rt->inputs()[0];
  if (d.in.shape.size() != 4 || d.in.shape[0] != 1)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: the input '{}' is {}, not [1, C, H, W]", o.package, d.in.name, shapeStr(d.in.shape)));
  d.out_name = d.rt->outputs()[0].name;
  if (!o.output.empty()) {
    const auto& outs = d.rt->outputs();
    if (std::none_of(outs.begin(), outs.end(), [&](const RuntimeTensor& t) { return t.name == o.output; }))
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--output {}: the package has no such output", o.output));
    d.out_name = o.output;
  }
  if (!o.labels.empty()) d.labels = readLines(o.labels, "a list of labels");
  return d;
}

void forEachDemoFrame(Demo& d, const DemoOptions& o, const DemoFrameFn& fn) {
  const Shape& s = d.in.shape;
  auto run = [&](const std::string& frame, Tensor x, const std::function<DemoPicture()>& picture) {
    d.rt->setInput(d.in.name, std::move(x));
    d.rt->run();
    fn(frame, picture);
  };
  if (isVideoFile(o.input)) {  // frame after frame as decoded: "clip.mp4#0", "clip.mp4#1", ...
    forEachVideoFrame(o.input, o.max_frames, [&](int64_t i, const uint8_t* bgr, int64_t h, int64_t w) {
      const std::string frame = fmt::format("{}#{}", o.input, i);
      run(frame, tidlPreprocessFrame(bgr, h, w, frame, o.pre_proc_type, s[1], s[2], s[3], o.mean, o.scale), [&] {
        DemoPicture p{h, w, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
        for (int64_t k = 0; k < h * w; ++k)
          for (int64_t c = 0; c < 3; ++c) p.rgb[static_cast<size_t>(k * 3 + c)] = bgr[k * 3 + 2 - c];
        return p;
      });
    });
    return;
  }
  for (const fs::path& p : pictures(o.input))
    run(p.string(), tidlPreprocessPicture(p, o.pre_proc_type, s[1], s[2], s[3], o.mean, o.scale), [&] {
      int w = 0, h = 0, n = 0;
      uint8_t* px = stbi_load(p.string().c_str(), &w, &h, &n, 3);
      if (!px) throw Error(ErrorCode::kInvalidInput, fmt::format("{}: cannot decode the picture ({})", p.string(), stbi_failure_reason()));
      DemoPicture pic{h, w, std::vector<uint8_t>(px, px + static_cast<size_t>(h) * static_cast<size_t>(w) * 3)};
      stbi_image_free(px);
      return pic;
    });
}

std::array<uint8_t, 3> vocColour(int64_t k) {
  std::array<uint8_t, 3> c{0, 0, 0};
  for (int j = 7; j >= 0 && k > 0; --j, k >>= 3)
    for (int b = 0; b < 3; ++b) c[static_cast<size_t>(b)] = static_cast<uint8_t>(c[static_cast<size_t>(b)] | (((k >> b) & 1) << j));
  return c;
}

void writePicturePng(const std::string& png, const DemoPicture& p) {
  if (!stbi_write_png(png.c_str(), static_cast<int>(p.w), static_cast<int>(p.h), 3, p.rgb.data(), static_cast<int>(p.w * 3)))
    throw Error(ErrorCode::kIo, fmt::format("{}: cannot write the picture", png));
}

std::string frameStem(const std::string& frame) {
  if (const size_t hash = frame.rfind('#'); hash != std::string::npos)
    return fs::path(frame.substr(0, hash)).stem().string() + "_" + frame.substr(hash + 1);
  return fs::path(frame).filename().replace_extension().string();
}

}  // namespace npuc::cli
