// NumPy .npy files (format versions 1.0–3.0, little-endian, C order) to and from Tensors.
#pragma once

#include "support/tensor.hpp"

#include <filesystem>
#include <string>

namespace npuc {

/// Parses .npy bytes; `name` is used in error messages. Throws kInvalidInput on malformed data.
Tensor parseNpy(const uint8_t* data, size_t size, const std::string& name);
Tensor readNpy(const std::filesystem::path& path);
std::string encodeNpy(const Tensor& t);
void writeNpy(const std::filesystem::path& path, const Tensor& t);

}  // namespace npuc
