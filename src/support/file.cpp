#include "support/file.hpp"

#include "support/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace npuc {

std::vector<uint8_t> readFileBytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(ErrorCode::kIo, "{}: file not found", path.string());
  if (std::filesystem::is_directory(path, ec)) fail(ErrorCode::kIo, "{}: is a directory, expected a file", path.string());
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, "{}: cannot open: {}", path.string(), std::strerror(errno));
  f.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(f.tellg());
  f.seekg(0);
  std::vector<uint8_t> data(size);
  if (size && !f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(size)))
    fail(ErrorCode::kIo, "{}: read failed", path.string());
  return data;
}

std::string readFileText(const std::filesystem::path& path) {
  auto b = readFileBytes(path);
  return std::string(b.begin(), b.end());
}

void writeFileAtomic(const std::filesystem::path& path, const void* data, size_t size) {
  auto tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(ErrorCode::kIo, "{}: cannot create: {}", path.string(), std::strerror(errno));
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      fail(ErrorCode::kIo, "{}: write failed", path.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    fail(ErrorCode::kIo, "{}: cannot rename into place: {}", path.string(), ec.message());
  }
}

}  // namespace npuc
