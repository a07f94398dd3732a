// SHA-256 (FIPS 180-4), for the content hash of packages.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace npuc {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::array<uint8_t, 32> digest();
  /// Lowercase hex of the digest.
  std::string hexDigest();

 private:
  void blocks(const uint8_t* p, size_t n);  // n whole 64-byte blocks; SHA extensions where the CPU has them
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256Hex(const void* data, size_t size);

namespace detail {
/// The two implementations of the compression function over `blocks` 64-byte blocks (they give the same state;
/// tests run both where the CPU has the SHA extensions).
void sha256BlocksPortable(uint32_t* state, const uint8_t* p, size_t blocks);
void sha256BlocksShaNi(uint32_t* state, const uint8_t* p, size_t blocks);
bool cpuHasShaNi();
}  // namespace detail

}  // namespace npuc
