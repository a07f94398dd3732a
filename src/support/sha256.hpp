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
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256Hex(const void* data, size_t size);

}  // namespace npuc
