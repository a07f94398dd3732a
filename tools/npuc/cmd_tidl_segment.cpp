// `npuc tidl-segment`: the TIDL guide's segmentation demo (§3.15.1.4.6: the output a 2-D buffer, each byte the class
// index of a pixel, fewer than 255 classes) on npuc packages — pictures or a video clip in (tidl_demo.hpp), each frame's
// class map written as an 8-bit grayscale PNG whose bytes are the class indices, and the classes it holds printed with
// their share of the pixels. A package whose output is the class map (ArgMax: integers [1, H, W] or [1, 1, H, W])
// gives it as it is; one whose output is per-class scores [1, C, H, W] gives the best class per pixel (the lowest
// index among equal scores).
#include "cli_common.hpp"
#include "tidl_demo.hpp"

#include "npuc/error.hpp"

#include <fmt/format.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace npuc::cli {

namespace {

namespace fs = std::filesystem;

struct SegmentOptions : DemoOptions {
  std::string out = ".", overlay;
};

/// The class map of the package's first output: [H, W] class indices.
std::vector<int64_t> classMap(const Runtime& rt, const std::string& name, int64_t* h, int64_t* w) {
  const Tensor y = rt.output(name);
  const Shape& s = y.shape();
  if (isInteger(y.dtype()) && (s.size() == 3 || (s.size() == 4 && s[1] == 1)) && s[0] == 1) {
    *h = s[s.size() - 2], *w = s.back();
    return y.toInt64();
  }
  if (s.size() != 4 || s[0] != 1)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("output '{}' is {} {}: a segmentation package writes a class map [1, H, W] "
                                                         "or scores [1, C, H, W]", name, dtypeName(y.dtype()), shapeStr(s)));
  const Tensor f = rt.outputFloat(name);
  const float* v = f.data<float>();
  const int64_t C = s[1], plane = s[2] * s[3];
  *h = s[2], *w = s[3];
  std::vector<int64_t> m(static_cast<size_t>(plane), 0);
  for (int64_t c = 1; c < C; ++c)
    for (int64_t i = 0; i < plane; ++i)
      if (v[c * plane + i] > v[m[static_cast<size_t>(i)] * plane + i]) m[static_cast<size_t>(i)] = c;
  return m;
}

int segment(SegmentOptions o) {
  Demo d = openDemo(o, "segmentation");
  makeOutputFolder(o.out, "-o");
  if (!o.overlay.empty()) makeOutputFolder(o.overlay, "--overlay");
  const std::string& out_name = d.out_name;
  forEachDemoFrame(d, o, [&](const std::string& frame, const std::function<DemoPicture()>& picture) {
    warnClippedInputs(*d.rt, "npuc tidl-segment");
    int64_t h = 0, w = 0;
    const std::vector<int64_t> m = classMap(*d.rt, out_name, &h, &w);
    std::vector<uint8_t> bytes(m.size());
    std::map<int64_t, int64_t> count;
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i] < 0 || m[i] > 254)
        throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: class {} in the map: the guide's class map holds one byte per "
                                                             "pixel, fewer than 255 classes", frame, m[i]));
      if (!d.labels.empty() && static_cast<size_t>(m[i]) >= d.labels.size())
        throw Error(ErrorCode::kInvalidArgument, fmt::format("-l {}: {} labels, the map has class {}", o.labels, d.labels.size(), m[i]));
      bytes[i] = static_cast<uint8_t>(m[i]);
      ++count[m[i]];
    }
    const std::string stem = frameStem(frame);
    const fs::path png = fs::path(o.out) / (stem + ".png");
    if (!stbi_write_png(png.string().c_str(), static_cast<int>(w), static_cast<int>(h), 1, bytes.data(), static_cast<int>(w)))
      throw Error(ErrorCode::kIo, fmt::format("{}: cannot write the class map", png.string()));
    std::vector<std::pair<int64_t, int64_t>> by(count.begin(), count.end());
    std::stable_sort(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string classes;
    for (const auto& [c, n] : by)
      classes += fmt::format("{}{} {:.1f}%", classes.empty() ? "" : ", ", d.name(c), 100.0 * static_cast<double>(n) / static_cast<double>(m.size()));
    fmt::print("{}: {}x{} class map -> {}; classes: {}\n", frame, w, h, png.string(), classes);
    if (!o.overlay.empty()) {  // the frame as decoded, each pixel half its class's colour (the map's pixel over it)
      DemoPicture p = picture();
      for (int64_t y = 0; y < p.h; ++y)
        for (int64_t x = 0; x < p.w; ++x) {
          const auto c = vocColour(bytes[static_cast<size_t>((y * h / p.h) * w + x * w / p.w)]);
          for (size_t k = 0; k < 3; ++k) {
            uint8_t& v = p.rgb[static_cast<size_t>((y * p.w + x) * 3) + k];
            v = static_cast<uint8_t>((v + c[k]) / 2);
          }
        }
      writePicturePng((fs::path(o.overlay) / (stem + ".png")).string(), p);
    }
  });
  return 0;
}

}  // namespace

void addTidlSegment(Command& app, Action& run) {
  auto* c = app.subcommand("tidl-segment", "The TIDL guide's segmentation demo on a package: pictures or a video clip in, each "
                                                "frame's class map out as an 8-bit PNG (a byte per pixel: its class)");
  auto o = std::make_shared<SegmentOptions>();
  addDemoOptions(c, *o);
  c->option("-o,--out", o->out, "Folder for the class maps, FRAME.png (created if missing; default: the current folder)");
  c->option("--overlay", o->overlay, "Also each frame as decoded with its class map over it, FRAME.png in this folder (each pixel "
                                     "(picture + colour) / 2, the colour Pascal VOC's of the class: what the guide's demo shows)");
  c->callback([o, &run] { run = [o] { return segment(*o); }; });
}

}  // namespace npuc::cli
