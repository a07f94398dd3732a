// The gear and AIPP state of a Runtime (runtime_impl.hpp): a package with gears holds one program per gear (batch
// or image size) and runs the one selected; dynamic AIPP stages take their parameter block, and a frame smaller than
// max_src_image_size, from the API between runs.
#include "runtime/runtime_impl.hpp"

#include "kernels/aipp.hpp"
#include "package/gears.hpp"

#include <cstring>
#include <tuple>

namespace npuc {

kernels::AippSetup Runtime::Impl::aippSetup(const Step& s, bool given) {
  const Shape &xs = s.shapes[0], &ys = s.shapes.back();
  return {ys[0], ys[1], ys[2], ys[3], given && s.aipp_stride ? s.aipp_stride : xs[1],
          {package::paramFloat(s.p[1]), package::paramFloat(s.p[2]), package::paramFloat(s.p[3]), package::paramFloat(s.p[4])}};
}

Runtime::Impl::Step* Runtime::Impl::dynamicAippStage(uint64_t address) {
  for (Step& s : steps)
    if (s.d->kind == LayerKind::kAipp && s.d->n_in == 2 && s.d->in(0).addr == address) return &s;
  return nullptr;
}

void Runtime::Impl::setAippFrame(Step& stage, std::vector<RuntimeTensor>::iterator it, const std::string& name, const Shape& shape,
                                 const void* data) {
  const int64_t max = it->shape[1], b = shape[1];
  if (b < 1 || b > max)
    fail(ErrorCode::kInvalidArgument, "input '{}' (the frame of a dynamic AIPP stage) takes uint8 [{}, B] with B bytes per image, "
         "at most max_src_image_size {}; got {}", name, it->shape[0], max, shapeStr(shape));
  // The block set now (if any) must fit: its source image's bytes at most B.
  const package::TensorRef& pr = stage.d->in(1);
  kernels::AippParams cur;
  bool have = false;
  try {
    cur = kernels::decodeAipp(at(pr.addr, pr.bytes, "AIPP parameters of " + name), pr.bytes);
    have = true;
  } catch (const Error&) {  // no block set yet: the run checks
  }
  if (have && kernels::isAippFormat(cur.input_format)) {
    const auto f = static_cast<kernels::AippFormat>(cur.input_format);
    const int64_t need = kernels::aippImageBytes(f, cur.src_w, cur.src_h);
    if (need > b)
      fail(ErrorCode::kInvalidArgument, "input '{}': aipp.src_size: a frame of {} bytes per image is smaller than the {}x{} {} "
           "source the AIPP parameter block gives, which needs {} bytes per image", name, b, cur.src_w, cur.src_h,
           kernels::aippFormatName(f), need);
  }
  std::memcpy(at(it->address, static_cast<uint64_t>(shape[0] * b), "input " + name), data, static_cast<size_t>(shape[0] * b));
  stage.aipp_stride = b == max ? 0 : b;
  markSet(static_cast<size_t>(it - inputs.begin()));
}

const std::vector<RuntimeGear>& Runtime::gears() const { return impl_->gears; }
const std::string& Runtime::gearKind() const { return impl_->gear_kind; }
const std::string& Runtime::gearInput() const { return impl_->gear_input; }

namespace {
std::string gearList(const std::vector<RuntimeGear>& gears, bool batch) {
  std::string s;
  for (auto& g : gears) s += (s.empty() ? "" : ", ") + (batch ? std::to_string(g.batch) : fmt::format("{}x{}", g.height, g.width));
  return s;
}
}  // namespace

void Runtime::setDynamicBatchSize(int64_t n) {
  Impl& im = *impl_;
  if (im.gear_kind != "batch")
    fail(ErrorCode::kInvalidArgument, "the package has no batch gears (translate with --dynamic_batch_size to get them)");
  for (size_t i = 0; i < im.gears.size(); ++i)
    if (im.gears[i].batch == n) {
      im.cur = im.gear_programs[i].get();
      return;
    }
  fail(ErrorCode::kInvalidArgument, "no gear of batch size {} (the package's gears: {})", n, gearList(im.gears, true));
}

void Runtime::setDynamicHWSize(int64_t height, int64_t width) {
  Impl& im = *impl_;
  if (im.gear_kind != "image_size")
    fail(ErrorCode::kInvalidArgument, "the package has no image-size gears (translate with --dynamic_image_size to get them)");
  for (size_t i = 0; i < im.gears.size(); ++i)
    if (im.gears[i].height == height && im.gears[i].width == width) {
      im.cur = im.gear_programs[i].get();
      return;
    }
  fail(ErrorCode::kInvalidArgument, "no gear of height x width {}x{} (the package's gears: {})", height, width, gearList(im.gears, false));
}

namespace {
/// Where the dynamic AIPP block of `input` goes in one program, after checking `params` against its stage (the
/// caller copies it there).
uint8_t* aippBlockDestination(Runtime::Impl& im, const std::string& input, const std::vector<uint8_t>& params) {
  using Impl = Runtime::Impl;
  auto it = std::find_if(im.inputs.begin(), im.inputs.end(), [&](const RuntimeTensor& r) { return r.name == input; });
  if (it == im.inputs.end()) fail(ErrorCode::kInvalidArgument, "the package has no input '{}'", input);
  const Impl::Step* stage = nullptr;
  for (const Impl::Step& s : im.steps)
    if (s.d->kind == LayerKind::kAipp && s.d->n_in == 2 && (s.d->in(0).addr == it->address || s.d->in(1).addr == it->address))
      stage = &s;
  if (!stage)
    fail(ErrorCode::kInvalidArgument, "input '{}' has no dynamic AIPP stage (translate with a dynamic aipp_op for it)", input);
  const package::TensorRef& pr = stage->d->in(1);
  if (params.size() != pr.bytes)
    fail(ErrorCode::kInvalidArgument, "input '{}': aipp.block.size: a parameter block for {} image(s) is {} bytes "
         "(kAippDynamicPara + {} x kAippDynamicBatchPara), got {}", input, stage->shapes.back()[0], pr.bytes,
         stage->shapes.back()[0] - 1, params.size());
  std::string why;
  try {
    // (against max_src_image_size: a frame set earlier may be replaced; the run checks the frame given)
    why = kernels::checkAipp(kernels::decodeAipp(params.data(), params.size()), Impl::aippSetup(*stage, false));
  } catch (const Error& e) {
    why = e.what();
  }
  if (!why.empty()) fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, why);
  return im.at(pr.addr, pr.bytes, "AIPP parameters of " + input);
}

}  // namespace

const std::vector<RuntimeRange>& Runtime::shapeRanges() const { return impl_->ranges; }

void Runtime::Impl::selectRange(const std::vector<int64_t>& at) {
  Impl* next = nullptr;
  if (std::equal(at.begin(), at.end(), ranges.begin(), ranges.end(), [](int64_t v, const RuntimeRange& r) { return v == r.hi; })) {
    next = this;
  } else {
    auto it = std::find_if(range_programs.begin(), range_programs.end(), [&](const auto& e) { return e.first == at; });
    if (it == range_programs.end()) {
      auto im = std::make_unique<Impl>();
      im->opts = opts;
      im->pkg = package::specializeShapes(pkg, at, "the package");
      im->numerics = numerics;
      im->pool = std::make_unique<ThreadPool>(opts.threads);
      im->prepare();
      range_programs.emplace_back(at, std::move(im));
      // The least recently used program other than the current one goes.
      if (range_programs.size() > kMaxRangePrograms)
        for (auto e = range_programs.begin(); e != range_programs.end(); ++e)
          if (e->second.get() != cur) {
            range_programs.erase(e);
            break;
          }
      it = std::prev(range_programs.end());
    } else {
      std::rotate(it, std::next(it), range_programs.end());
      it = std::prev(range_programs.end());
    }
    next = it->second.get();
  }
  if (next != cur) {  // inputs set that keep their shape, and the AIPP stages' frame sizes, go along
    for (size_t i = 0; i < cur->inputs.size() && i < cur->input_set.size(); ++i) {
      if (!cur->input_set[i]) continue;
      const RuntimeTensor& from = cur->inputs[i];
      for (size_t k = 0; k < next->inputs.size(); ++k) {
        const RuntimeTensor& to = next->inputs[k];
        if (to.name != from.name || to.shape != from.shape || to.dtype != from.dtype) continue;
        const uint64_t bytes = static_cast<uint64_t>(shapeNumel(from.shape)) * dtypeSize(from.dtype);
        std::memcpy(next->at(to.address, bytes, "input " + to.name), cur->at(from.address, bytes, "input " + from.name), bytes);
        next->markSet(k);
      }
    }
    for (size_t i = 0; i < cur->steps.size() && i < next->steps.size(); ++i)
      if (cur->steps[i].d->kind == LayerKind::kAipp) next->steps[i].aipp_stride = cur->steps[i].aipp_stride;
  }
  cur = next;
  range_at = at;
}

void Runtime::setInputShape(const std::string& name, const Shape& shape) {
  Impl& h = *impl_;
  if (h.ranges.empty()) fail(ErrorCode::kInvalidArgument, "setInputShape: the package serves no shape range (translate with --input_shape LO~HI)");
  auto it = std::find_if(h.inputs.begin(), h.inputs.end(), [&](const RuntimeTensor& r) { return r.name == name; });
  if (it == h.inputs.end()) fail(ErrorCode::kInvalidArgument, "setInputShape: the package has no input '{}'", name);
  std::vector<int64_t> at = h.range_at;
  bool ok = shape.size() == it->shape.size();
  for (size_t d = 0; ok && d < shape.size(); ++d) {
    auto r = std::find_if(h.ranges.begin(), h.ranges.end(), [&](const RuntimeRange& x) { return x.covers(name, static_cast<int64_t>(d)); });
    if (r == h.ranges.end()) ok = shape[d] == it->shape[d];
    else if ((ok = shape[d] >= r->lo && shape[d] <= r->hi)) at[static_cast<size_t>(r - h.ranges.begin())] = shape[d];
  }
  if (!ok) {
    std::string dims;
    for (size_t d = 0; d < it->shape.size(); ++d) {
      auto r = std::find_if(h.ranges.begin(), h.ranges.end(), [&](const RuntimeRange& x) { return x.covers(name, static_cast<int64_t>(d)); });
      dims += (d ? "," : "") + (r == h.ranges.end() ? std::to_string(it->shape[d]) : fmt::format("{}~{}", r->lo, r->hi));
    }
    fail(ErrorCode::kInvalidArgument, "input '{}' takes shape [{}] (the package's ranges), got {}", name, dims, shapeStr(shape));
  }
  h.selectRange(at);
}

void Runtime::setDynamicAipp(const std::string& input, const std::vector<uint8_t>& params) {
  if (!impl_->ranges.empty()) {
    // A ranged picture behind this stage: the block's output size selects the program at that size.
    Impl& h = *impl_;
    const Impl::Step* stage = nullptr;
    auto in = std::find_if(h.inputs.begin(), h.inputs.end(), [&](const RuntimeTensor& r) { return r.name == input; });
    for (const Impl::Step& s : h.steps)
      if (in != h.inputs.end() && s.d->kind == LayerKind::kAipp && s.d->n_in == 2 && (s.d->in(0).addr == in->address || s.d->in(1).addr == in->address))
        stage = &s;
    const std::string picture = stage ? h.layers[stage->d->seq].output.name : "";
    std::vector<int64_t> at = h.range_at;
    bool ranged = false;
    kernels::AippParams p;
    for (size_t j = 0; j < h.ranges.size(); ++j) {
      const RuntimeRange& rr = h.ranges[j];
      const bool mine = rr.value == picture || std::any_of(rr.also.begin(), rr.also.end(), [&](const auto& m) { return m.first == picture; });
      if (!mine || picture.empty()) continue;
      const int64_t dim = rr.value == picture ? rr.dim : std::find_if(rr.also.begin(), rr.also.end(), [&](const auto& m) { return m.first == picture; })->second;
      if (!ranged) {
        try {
          p = kernels::decodeAipp(params.data(), params.size());
        } catch (const Error& e) {
          fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, e.what());
        }
        ranged = true;
      }
      const auto hw = kernels::aippOutputSize(p, 0);
      for (size_t i = 1; i < p.batch.size(); ++i)
        if (kernels::aippOutputSize(p, i) != hw)
          fail(ErrorCode::kInvalidArgument, "input '{}': aipp.output_size: image {} gives {}x{} (H x W), image 0 {}x{}: one size per inference",
               input, i, kernels::aippOutputSize(p, i).first, kernels::aippOutputSize(p, i).second, hw.first, hw.second);
      const int64_t v = dim == 2 ? hw.first : hw.second;
      if (v < h.ranges[j].lo || v > h.ranges[j].hi)
        fail(ErrorCode::kInvalidArgument, "input '{}': aipp.output_size: the block's picture is {}x{} (H x W); its {} must lie in the package's "
             "range {}~{} (the seed: AIPP's output within the --input_shape range)", input, hw.first, hw.second,
             dim == 2 ? "height" : "width", h.ranges[j].lo, h.ranges[j].hi);
      at[j] = v;
    }
    if (ranged) h.selectRange(at);
  }
  if (!impl_->gears.empty()) {
    Impl& holder = *impl_;
    kernels::AippParams p;
    try {
      p = kernels::decodeAipp(params.data(), params.size());
    } catch (const Error& e) {
      fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, e.what());
    }
    if (holder.gear_kind == "batch") {
      // The seed: with dynamic batch, the block is set for the largest batch; each gear takes its first records.
      int64_t most = 0;
      for (auto& g : holder.gears) most = std::max(most, g.batch);
      if (static_cast<int64_t>(p.batch.size()) != most)
        fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_batch: with batch gears the block holds the largest batch, {} "
             "image(s) (batchNum {}), got batchNum {}", input, most, most, p.batch.size());
      // Every gear's block checked before any is written: a refused block leaves them all as they were.
      std::vector<std::tuple<Impl*, uint8_t*, std::vector<uint8_t>>> blocks;
      for (size_t i = 0; i < holder.gears.size(); ++i) {
        kernels::AippParams mine = p;
        mine.batch.resize(static_cast<size_t>(holder.gears[i].batch));
        std::vector<uint8_t> block = kernels::encodeAipp(mine);
        uint8_t* dst = aippBlockDestination(*holder.gear_programs[i], input, block);
        blocks.emplace_back(holder.gear_programs[i].get(), dst, std::move(block));
      }
      for (auto& [prog, dst, block] : blocks) {
        std::memcpy(dst, block.data(), block.size());
        prog->markWritten(dst);
      }
      return;
    }
    // The seed: with dynamic image sizes, a dynamic AIPP block may not crop or pad, and its width and height are the
    // largest gear's (on a smaller gear, npuc's scf takes the picture down to that gear's size).
    for (auto& b : p.batch)
      if (b.crop || b.padding)
        fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_image_size: with image-size gears the block may not crop or pad "
             "(cropSwitch {}, paddingSwitch {})", input, b.crop, b.padding);
    std::vector<std::pair<int64_t, int64_t>> hw;
    for (const RuntimeGear& g : holder.gears) hw.emplace_back(g.height, g.width);
    const int at = package::largestGear(hw);
    const RuntimeGear* largest = at < 0 ? nullptr : &holder.gears[static_cast<size_t>(at)];
    if (!largest)
      fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_image_size: no gear is at least as high and as wide as every other "
           "(gears: {}), so the block has no largest gear's size to take", input, gearList(holder.gears, false));
    if (p.src_w != largest->width || p.src_h != largest->height)
      fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_image_size: with image-size gears the block's srcImageSizeW x H "
           "is the largest gear's, {}x{}, got {}x{}", input, largest->width, largest->height, p.src_w, p.src_h);
  }
  uint8_t* dst = aippBlockDestination(*impl_->cur, input, params);
  std::memcpy(dst, params.data(), params.size());
  impl_->cur->markWritten(dst);
}

void Runtime::setDynamicAipp(const std::string& input, const DynamicAippParams& params) {
  std::vector<uint8_t> block;
  try {
    block = params.encode();
  } catch (const Error& e) {
    fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, e.what());
  }
  setDynamicAipp(input, block);
}

}  // namespace npuc
