#include "support/tensor.hpp"

#include "support/error.hpp"
#include "support/fp16.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace npuc {

int64_t shapeNumel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) fail(ErrorCode::kInvalidInput, "shape {} has an unknown or negative dimension", shapeStr(s));
    if (d != 0 && n > (int64_t{1} << 40) / d)
      fail(ErrorCode::kInvalidInput, "shape {} has more than 2^40 elements", shapeStr(s));
    n *= d;
  }
  return n;
}

std::string shapeStr(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += 'x';
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return r;
}

bool shapeIsStatic(const Shape& s) {
  for (int64_t d : s)
    if (d < 0) return false;
  return true;
}

namespace {
// Recycles large blocks: inference allocates the same sizes on every run, and fresh pages cost a page fault
// each. Blocks of at least kMinCached bytes are kept, up to kMaxCached bytes in all. A request takes the most
// recently freed block that fits it without wasting more than half (capacity in [size, 2 * size]): that block is
// the likeliest to be still in cache, so a layer's output lands where an earlier layer's output was just read —
// as an arena planned by liveness would place it.
constexpr size_t kMinCached = size_t{64} << 10;
constexpr size_t kMaxCached = size_t{512} << 20;
struct CachedBlock {
  void* p;
  uint64_t freed;  // order of freeing (larger: more recent)
};
struct BlockCache {
  std::mutex mu;
  std::multimap<size_t, CachedBlock> blocks;  // by capacity
  size_t bytes = 0;
  size_t limit = kMaxCached;
  uint64_t clock = 0;
  ~BlockCache() {
    for (auto& [n, b] : blocks) std::free(b.p);
  }
};
BlockCache& blockCache() {
  static BlockCache* c = new BlockCache();  // never destroyed: buffers may outlive static destruction
  return *c;
}
size_t roundedSize(size_t bytes) { return bytes == 0 ? 64 : (bytes + 63) / 64 * 64; }
}  // namespace

size_t Buffer::setCacheLimit(size_t bytes) {
  BlockCache& c = blockCache();
  std::lock_guard<std::mutex> lk(c.mu);
  size_t old = c.limit;
  c.limit = bytes;
  while (c.bytes > c.limit && !c.blocks.empty()) {
    auto it = std::prev(c.blocks.end());
    c.bytes -= it->first;
    std::free(it->second.p);
    c.blocks.erase(it);
  }
  return old;
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  std::shared_ptr<Buffer> b = allocateUninitialized(bytes);
  std::memset(b->data_, 0, roundedSize(bytes));
  return b;
}

std::shared_ptr<Buffer> Buffer::allocateUninitialized(size_t bytes) {
  const size_t rounded = roundedSize(bytes);
  size_t capacity = rounded;
  void* p = nullptr;
  if (rounded >= kMinCached) {
    BlockCache& c = blockCache();
    std::lock_guard<std::mutex> lk(c.mu);
    auto best = c.blocks.end();
    for (auto it = c.blocks.lower_bound(rounded); it != c.blocks.end() && it->first <= 2 * rounded; ++it) {
      if (best == c.blocks.end() || it->second.freed > best->second.freed) best = it;
    }
    if (best != c.blocks.end()) {
      p = best->second.p;
      capacity = best->first;
      c.bytes -= capacity;
      c.blocks.erase(best);
    }
  }
  if (!p) p = std::aligned_alloc(64, rounded);
  if (!p) fail(ErrorCode::kIo, "out of memory allocating {} bytes", bytes);
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
  std::memset(p, 0xff, capacity);
#endif
  return std::shared_ptr<Buffer>(new Buffer(static_cast<uint8_t*>(p), bytes, capacity));
}

Buffer::~Buffer() {
  if (capacity_ >= kMinCached) {
    BlockCache& c = blockCache();
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.bytes + capacity_ <= c.limit) {
      c.blocks.emplace(capacity_, CachedBlock{data_, ++c.clock});
      c.bytes += capacity_;
      return;
    }
  }
  std::free(data_);
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shapeNumel(shape_);
  buffer_ = Buffer::allocate(nbytes());
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  const size_t bytes = static_cast<size_t>(shapeNumel(shape)) * dtypeSize(dtype);
  return Tensor(dtype, std::move(shape), Buffer::allocateUninitialized(bytes));
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t offset)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(offset) {
  numel_ = shapeNumel(shape_);
  if (!buffer_ || offset_ + nbytes() > buffer_->size())
    fail(ErrorCode::kInvalidInput, "tensor of {} {} ({} bytes) does not fit its buffer", dtypeName(dtype_),
         shapeStr(shape_), nbytes());
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shapeNumel(shape) != numel_)
    fail(ErrorCode::kInvalidInput, "cannot reshape {} to {}", shapeStr(shape_), shapeStr(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

template <typename F>
static void forEachAsDouble(const Tensor& t, F&& f) {
  const void* p = t.raw();
  int64_t n = t.numel();
  switch (t.dtype()) {
#define NPUC_CASE(DT, T) \
  case DT: for (int64_t i = 0; i < n; ++i) f(static_cast<double>(static_cast<const T*>(p)[i])); break;
    NPUC_CASE(DType::kF32, float)
    NPUC_CASE(DType::kF64, double)
    NPUC_CASE(DType::kI8, int8_t)
    NPUC_CASE(DType::kU8, uint8_t)
    NPUC_CASE(DType::kI16, int16_t)
    NPUC_CASE(DType::kU16, uint16_t)
    NPUC_CASE(DType::kI32, int32_t)
    NPUC_CASE(DType::kU32, uint32_t)
    NPUC_CASE(DType::kI64, int64_t)
    NPUC_CASE(DType::kU64, uint64_t)
    NPUC_CASE(DType::kBool, bool)
#undef NPUC_CASE
    case DType::kF16: for (int64_t i = 0; i < n; ++i) f(static_cast<double>(halfToFloat(static_cast<const uint16_t*>(p)[i]))); break;
    case DType::kBF16: for (int64_t i = 0; i < n; ++i) f(static_cast<double>(bf16ToFloat(static_cast<const uint16_t*>(p)[i]))); break;
    default: fail(ErrorCode::kUnsupported, "cannot read {} values as numbers", dtypeName(t.dtype()));
  }
}

std::vector<int64_t> Tensor::toInt64() const {
  if (!isInteger(dtype_)) fail(ErrorCode::kInvalidInput, "expected an integer tensor, got {}", dtypeName(dtype_));
  std::vector<int64_t> r;
  r.reserve(static_cast<size_t>(numel_));
  if (dtype_ == DType::kI64) {
    const int64_t* p = static_cast<const int64_t*>(raw());
    r.assign(p, p + numel_);
  } else {
    forEachAsDouble(*this, [&](double v) { r.push_back(static_cast<int64_t>(v)); });
  }
  return r;
}

std::vector<double> Tensor::toDouble() const {
  std::vector<double> r;
  r.reserve(static_cast<size_t>(numel_));
  forEachAsDouble(*this, [&](double v) { r.push_back(v); });
  return r;
}

bool Tensor::sameBits(const Tensor& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && (nbytes() == 0 || std::memcmp(raw(), o.raw(), nbytes()) == 0);
}

void Tensor::checkType(DType t) const {
  if (t != dtype_)
    fail(ErrorCode::kInternal, "tensor of {} accessed as {}", dtypeName(dtype_), dtypeName(t));
}

}  // namespace npuc
