// Tensor: an element type, a static shape, and a reference to a shared byte buffer.
//
// Buffers are reference counted; copying a Tensor shares its data. Constants in the IR are Tensors whose
// buffers nobody writes (shared immutable buffers); kernels write only tensors they allocated.
#pragma once

#include "npuc/dtype.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace npuc {

using Shape = std::vector<int64_t>;

/// Product of the dims (1 for a scalar). Throws kInvalidInput on negative dims or overflow.
int64_t shapeNumel(const Shape& s);
/// "1x3x224x224" ("scalar" for rank 0; "?" for unknown dims).
std::string shapeStr(const Shape& s);
bool shapeIsStatic(const Shape& s);

/// 64-byte aligned bytes.
class Buffer {
 public:
  /// Zero-initialised.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  /// Left as they are (a recycled block holds an earlier tensor's bytes): for what is about to be overwritten in
  /// full. Sanitizer and debug builds fill them with 0xff (NaN, -1) so a reader of unwritten bytes shows.
  static std::shared_ptr<Buffer> allocateUninitialized(size_t bytes);
  /// Freed blocks of 64 KiB and more are kept for reuse (inference allocates the same sizes every run; a request
  /// takes the most recently freed block of between its size and twice that), up to this many bytes in all
  /// (default 512 MiB). Returns the previous limit; lowering it frees blocks now. The
  /// compiler sets 0: it allocates once and wants the memory back.
  static size_t setCacheLimit(size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Buffer(uint8_t* d, size_t n, size_t capacity) : data_(d), size_(n), capacity_(capacity) {}
  uint8_t* data_;
  size_t size_;
  size_t capacity_;  // bytes allocated (a recycled block may be larger than size_)
};

class Tensor {
 public:
  Tensor() = default;
  /// Allocates a zero-filled tensor.
  Tensor(DType dtype, Shape shape);
  /// Allocates a tensor whose bytes are not cleared (Buffer::allocateUninitialized): a kernel's output, written in
  /// full.
  static Tensor uninitialized(DType dtype, Shape shape);
  /// Views `bytes` of `buffer` starting at `offset` (must hold the whole tensor).
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t offset = 0);

  template <typename T>
  static Tensor fromVector(Shape shape, const std::vector<T>& values);
  template <typename T>
  static Tensor scalar(T v) { return fromVector<T>({}, std::vector<T>{v}); }

  bool defined() const { return buffer_ != nullptr || dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtypeSize(dtype_); }

  void* raw() { return buffer_ ? buffer_->data() + offset_ : nullptr; }
  const void* raw() const { return buffer_ ? buffer_->data() + offset_ : nullptr; }
  template <typename T> T* data() { checkType(DTypeOf<T>::value); return static_cast<T*>(raw()); }
  template <typename T> const T* data() const { checkType(DTypeOf<T>::value); return static_cast<const T*>(raw()); }
  template <typename T> std::span<const T> values() const { return {data<T>(), static_cast<size_t>(numel_)}; }

  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t offset() const { return offset_; }

  /// Same data, another shape with the same element count.
  Tensor reshaped(Shape shape) const;
  /// Deep copy.
  Tensor clone() const;
  /// Integer tensor (any int type) as int64 values; throws kInvalidInput for other types.
  std::vector<int64_t> toInt64() const;
  /// Float or integer tensor as doubles.
  std::vector<double> toDouble() const;
  /// Bitwise equality of dtype, shape and bytes.
  bool sameBits(const Tensor& other) const;

 private:
  void checkType(DType t) const;
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

template <typename T>
Tensor Tensor::fromVector(Shape shape, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>::value, std::move(shape));
  T* d = t.data<T>();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) d[i] = values[i];
  return t;
}

}  // namespace npuc
