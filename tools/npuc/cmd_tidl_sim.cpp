// `npuc tidl-sim`: TIDL's simulation tool (eve_test_dl_algo.out, the TIDL user guide §3.15.1.4.13) on npuc packages. It
// takes the guide's list of configurations ("1 ./tidl_config.txt" lines, ended by "0") or one configuration, and for
// each runs numFrames frames of inData through the package netBinFile names (tidl-import's outputNetFile: the package,
// or the reference file tidl-import writes there), frame after frame on one runtime — an int8-pow2 package carries
// its dynamic quantization from frame to frame as a TIDL run does —, appends every frame's outputs as the device
// holds them to outData, and writes the last frame's layer traces as <traceDumpBaseName><layer>_<W>x<H>.y.
#include "cli_common.hpp"
#include "tidl_frames.hpp"

#include "npuc/error.hpp"
#include "npuc/io.hpp"
#include "npuc/runtime.hpp"
#include "npuc/tidl_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

/// The configurations a simulation file runs: the guide's list ("1 PATH" runs PATH, "0" ends it; '#' starts a
/// comment), or the file itself when its first line is not such an entry.
std::vector<std::string> simulationList(const std::string& file) {
  const std::string text = readFileText(file, tidl::kMaxImportConfigBytes, "a simulation list");
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> runs;
  int n = 0;
  bool list = false;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) tidl::dropByteOrderMark(line);
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ls(line);
    std::string flag, path, extra;
    if (!(ls >> flag)) continue;
    if (!list && flag != "0" && flag != "1") return {file};  // (a configuration: key = value lines)
    list = true;
    if (flag == "0") return runs;
    if (flag != "1") fail(ErrorCode::kInvalidInput, "{}:{}: '{}': a line of the list is \"1 CONFIG\" (run it) or \"0\" (the end)", file, n, flag);
    if (!(ls >> path) || (ls >> extra)) fail(ErrorCode::kInvalidInput, "{}:{}: \"1\" takes one configuration file", file, n);
    if (path.size() >= 2 && path.front() == '"' && path.back() == '"') path = path.substr(1, path.size() - 2);
    runs.push_back(path);
  }
  if (!list) fail(ErrorCode::kInvalidInput, "{}: empty (a list of \"1 CONFIG\" lines ended by \"0\", or a configuration)", file);
  fail(ErrorCode::kInvalidInput, "{}: the list does not end with \"0\" (the guide's terminator)", file);
}

struct SimOptions {
  std::string list;
  int threads = 1;
  bool exact = false;
};

/// `cfg` with the pre-processing keys (preProcType, inMean, inScale) it leaves out taken from the package reference's
/// (the import's), parsed as the configuration's own would be.
tidl::ImportConfig withImportKeys(tidl::ImportConfig cfg, const std::map<std::string, std::string>& ref) {
  std::string text;
  for (const char* k : {"preProcType", "inMean", "inScale"})
    if (!cfg.keys.count(k) && ref.count(k)) text += fmt::format("{} = {}\n", k, ref.at(k));
  if (text.empty()) return cfg;
  const tidl::ImportConfig extra = tidl::parseImportConfig(text, cfg.file + " (from the package reference)", tidl::ConfigKind::kSimulation);
  for (auto [k, e] : extra.keys) {
    e.line = 0;  // (an error names the key, not a line of the file)
    cfg.keys.emplace(k, e);
  }
  return cfg;
}

/// One configuration's run.
void simulate(const std::string& file, const SimOptions& o) {
  tidl::ImportConfig cfg = tidl::readImportConfig(file, tidl::ConfigKind::kSimulation);
  auto has = [&](const char* k) { return cfg.keys.count(k) != 0; };
  auto num = [&](const char* k, double def) { return has(k) ? cfg.keys.at(k).numbers.at(0) : def; };
  auto line = [&](const char* k) { return has(k) ? cfg.keys.at(k).line : 0; };
  for (const char* k : {"netBinFile", "inData"})
    if (!has(k)) tidl::configError(cfg, 0, k, "is required");
  std::map<std::string, std::string> ref;  // (what tidl-import recorded beside the package: inElementType)
  const fs::path package = packageFolder(cfg.keys.at("netBinFile").raw, "netBinFile", &ref);
  cfg = withImportKeys(std::move(cfg), ref);
  // The frames are read as the import read its calibration frames: inElementType defaults to the import's, and one that
  // differs from it is refused (raw bytes read with the other sign give other values, and a run with no error).
  int element_type = has("inElementType") ? static_cast<int>(num("inElementType", 1)) : 1;
  if (auto it = ref.find("inElementType"); it != ref.end()) {
    const int imported = it->second == "0" ? 0 : 1;
    if (has("inElementType") && element_type != imported)
      tidl::configError(cfg, line("inElementType"), "inElementType",
                        fmt::format("{} but the package was imported with inElementType = {} (its calibration frames {}): the frames "
                                    "must be read as the import read them", element_type, imported, imported ? "signed" : "unsigned"));
    element_type = imported;
  }
  if (has("paramsBinFile") && fs::weakly_canonical(packageFolder(cfg.keys.at("paramsBinFile").raw, "paramsBinFile")) != fs::weakly_canonical(package))
    tidl::configError(cfg, line("paramsBinFile"), "paramsBinFile", fmt::format("names another package than netBinFile ({})", package.string()));
  if (num("updateNetWithStats", 0) != 0)
    tidl::configError(cfg, line("updateNetWithStats"), "updateNetWithStats",
                      "1 would rewrite the network; an npuc package is never rewritten (its content hash covers it): the dynamic "
                      "quantization's ranges carry from frame to frame in the runtime instead. Set it to 0");
  Runtime rt(package, {o.threads, o.exact});
  if (rt.inputs().size() != 1)
    tidl::configError(cfg, line("netBinFile"), "netBinFile", fmt::format("the package has {} inputs; inData feeds one", rt.inputs().size()));
  const RuntimeTensor& in = rt.inputs()[0];
  const Shape& s = in.shape;
  if (s.size() != 4 || s[0] != 1)
    tidl::configError(cfg, line("netBinFile"), "netBinFile", fmt::format("the package's input '{}' is {}, not [1, C, H, W]", in.name, shapeStr(s)));
  for (auto [k, dim] : {std::pair{"inNumChannels", 1}, {"inHeight", 2}, {"inWidth", 3}})
    if (has(k) && num(k, 0) != static_cast<double>(s[static_cast<size_t>(dim)]))
      tidl::configError(cfg, line(k), k, fmt::format("{} but the package's input '{}' is {}", num(k, 0), in.name, shapeStr(s)));
  const int64_t frames = static_cast<int64_t>(num("numFrames", 1));
  const Tensor x = tidlFrames(cfg, cfg.keys.at("inData"), FrameKeys{"inData", "rawImage", "numFrames"}, s, frames, num("rawImage", 1) != 0,
                              element_type);
  const fs::path out_data = has("outData") ? fs::path(cfg.keys.at("outData").raw) : fs::path("stats_tool_out.bin");
  const std::string trace_base = has("traceDumpBaseName") ? cfg.keys.at("traceDumpBaseName").raw : "";
  if (!trace_base.empty() && fs::path(trace_base).has_parent_path()) makeOutputFolder(fs::path(trace_base).parent_path(), "traceDumpBaseName");
  const fs::path tmp = out_data.string() + ".npuc-partial";  // (renamed once every frame ran: outData whole, or not at all)
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorCode::kIo, "{}: outData: cannot write \"{}\"", file, out_data.string());
  struct Cleanup {
    const fs::path& tmp;
    bool done = false;
    ~Cleanup() {
      std::error_code ec;
      if (!done) fs::remove(tmp, ec);
    }
  } cleanup{tmp};
  const int64_t per = s[1] * s[2] * s[3];
  for (int64_t f = 0; f < frames; ++f) {
    Tensor frame(DType::kF32, s);
    std::memcpy(frame.data<float>(), x.data<float>() + f * per, static_cast<size_t>(per) * sizeof(float));
    rt.setInput(in.name, frame);
    LayerCallback cb;
    if (!trace_base.empty() && f + 1 == frames)  // (the last frame's: TIDL's files carry no frame number)
      cb = [&](const RuntimeLayer& l, const Tensor& y) {
        const Shape& ys = y.shape();
        int64_t w = ys.empty() ? 1 : ys.back(), h = ys.size() >= 2 ? ys[ys.size() - 2] : 1;
        if (l.output.channel_last) w = ys[ys.size() - 2], h = ys.size() >= 4 ? ys[ys.size() - 3] : 1;
        const std::string id = l.output_index ? fmt::format("{}_out{}", l.seq, l.output_index) : std::to_string(l.seq);
        std::ofstream(trace_base + fmt::format("{}_{}x{}.y", id, w, h), std::ios::binary)
            .write(static_cast<const char*>(y.raw()), static_cast<std::streamsize>(y.nbytes()));
      };
    rt.run(cb);
    warnClippedInputs(rt, "npuc tidl-sim");
    std::string line_out = fmt::format("{}: frame {}:", file, f);
    for (const RuntimeTensor& t : rt.outputs()) {
      const Tensor y = rt.output(t.name);
      out.write(static_cast<const char*>(y.raw()), static_cast<std::streamsize>(y.nbytes()));
      const Tensor v = rt.outputFloat(t.name);
      if (v.numel() > 1) {
        const float* p = v.data<float>();
        const int64_t k = std::max_element(p, p + v.numel()) - p;
        line_out += fmt::format(" {} top-1 {} ({:.4g})", t.name, k, p[k]);
      }
    }
    fmt::print("{}\n", line_out);
  }
  out.close();
  if (!out) fail(ErrorCode::kIo, "{}: outData: writing \"{}\" failed", file, out_data.string());
  fs::rename(tmp, out_data);
  cleanup.done = true;
  fmt::print("{}: {} frame(s) of {} through {}: outputs in {}{}\n", file, frames, cfg.keys.at("inData").raw, package.string(), out_data.string(),
             trace_base.empty() ? "" : fmt::format(", the last frame's traces as {}<layer>_<W>x<H>.y", trace_base));
}

}  // namespace

void addTidlSim(Command& app, Action& run) {
  auto* c = app.subcommand("tidl-sim", "Run TI TIDL's simulation configuration (eve_test_dl_algo.out's file, §3.15.1.4.13) on npuc packages");
  auto o = std::make_shared<SimOptions>();
  c->option("config", o->list,
                "The simulation file: the guide's list (\"1 CONFIG\" lines, \"0\" at the end) or one configuration (rawImage, numFrames, inData, "
                "inElementType, preProcType, traceDumpBaseName, outData, netBinFile, paramsBinFile, …)")
      ->required();
  c->option("-t,--threads", o->threads, "Threads of the simulated device (the bits do not depend on it)")->range(1, 256);
  c->flag("--exact", o->exact, "Run the reference kernels (same bits, slower)");
  c->callback([o, &run] {
    run = [o] {
      for (const std::string& cfg : simulationList(o->list)) simulate(cfg, *o);
      return 0;
    };
  });
}

}  // namespace npuc::cli
