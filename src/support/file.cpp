#include "support/file.hpp"

#include "support/error.hpp"
#include "support/sha256.hpp"

#include <algorithm>
#include <utility>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace npuc {

namespace fs = std::filesystem;

namespace {

/// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void syncPath(const fs::path& p, bool dir) {
  Fd f{::open(p.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC)};
  if (f.fd < 0) fail(ErrorCode::kIo, "{}: cannot open to flush it to disk: {}", p.string(), std::strerror(errno));
  // Some file systems (and /dev/shm-like ones) refuse fsync on folders: that is not an error of the data.
  if (::fsync(f.fd) != 0 && errno != EINVAL && errno != EROFS)
    fail(ErrorCode::kIo, "{}: cannot flush to disk: {}", p.string(), std::strerror(errno));
}

std::atomic<unsigned> g_counter{0};

}  // namespace

namespace {

/// A regular file opened for reading, and its size; what is not one is refused.
Fd openRegular(const fs::path& path, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer; opened so, it is refused below like any
  // non-regular file (regular files ignore the flag).
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) {
    int err = errno;
    if (err == ENOENT) fail(ErrorCode::kIo, "{}: file not found", path.string());
    fail(ErrorCode::kIo, "{}: cannot open: {}", path.string(), std::strerror(err));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(ErrorCode::kIo, "{}: cannot read: {}", path.string(), std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(ErrorCode::kIo, "{}: is a directory, expected a file", path.string());
  if (!S_ISREG(st.st_mode)) fail(ErrorCode::kIo, "{}: is not a regular file (a device, pipe or socket)", path.string());
  *size = static_cast<uint64_t>(st.st_size);
  return f;
}

/// The next `size` bytes of an open file.
std::vector<uint8_t> readExactly(const Fd& f, const fs::path& path, uint64_t size) {
  std::vector<uint8_t> data(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(f.fd, data.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ErrorCode::kIo, "{}: read failed: {}", path.string(), std::strerror(errno));
    if (n == 0) fail(ErrorCode::kIo, "{}: the file shrank while it was read ({} of {} bytes)", path.string(), done, size);
    done += static_cast<size_t>(n);
  }
  return data;
}

}  // namespace

std::vector<uint8_t> readFileBytes(const fs::path& path, uint64_t max_bytes, const char* what_limits) {
  uint64_t size = 0;
  Fd f = openRegular(path, &size);
  if (size > max_bytes)
    fail(ErrorCode::kInvalidInput, "{}: {} bytes, more than the {} bytes {} allows (nothing was read)", path.string(), size,
         max_bytes, what_limits);
  return readExactly(f, path, size);
}

std::vector<uint8_t> readFilePrefix(const fs::path& path, uint64_t bytes) {
  uint64_t size = 0;
  Fd f = openRegular(path, &size);
  return readExactly(f, path, std::min(size, bytes));
}

std::string readFileText(const fs::path& path, uint64_t max_bytes, const char* what_limits) {
  auto b = readFileBytes(path, max_bytes, what_limits);
  return std::string(b.begin(), b.end());
}

fs::path uniqueSibling(const fs::path& path, const char* tag) {
  fs::path name = path.filename();
  std::string base = name.string();
  if (!base.empty() && base[0] != '.') base = "." + base;
  return path.parent_path() / fmt::format("{}.{}-{}-{}", base, tag, ::getpid(), g_counter++);
}

void writeFileAtomic(const fs::path& path, const void* data, size_t size) {
  fs::path tmp = uniqueSibling(path, "tmp");
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
    if (f.fd < 0) fail(ErrorCode::kIo, "{}: cannot create: {}", path.string(), std::strerror(errno));
    auto cleanup = [&](const char* what) {
      int err = errno;
      std::error_code ec;
      fs::remove(tmp, ec);
      fail(ErrorCode::kIo, "{}: {}: {}", path.string(), what, std::strerror(err));
    };
    const auto* p = static_cast<const uint8_t*>(data);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(f.fd, p + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) cleanup("write failed");
      done += static_cast<size_t>(n);
    }
    if (::fsync(f.fd) != 0 && errno != EINVAL) cleanup("cannot flush to disk");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::error_code ec;
    fs::remove(tmp, ec);
    fail(ErrorCode::kIo, "{}: cannot rename into place: {}", path.string(), std::strerror(err));
  }
}

void syncFile(const fs::path& path) { syncPath(path, false); }

void syncTree(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_regular_file(st)) syncPath(it->path(), false);
    else if (fs::is_directory(st)) syncPath(it->path(), true);
  }
  if (ec) fail(ErrorCode::kIo, "{}: cannot list the folder: {}", dir.string(), ec.message());
  syncPath(dir, true);
}

std::string whyNotPlainName(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is not a name: it must name one folder or file, not the folder itself or its parent";
  if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos) return "contains a path separator";
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) return "contains a control character";
  if (name[0] == '.') return "starts with '.': npuc keeps such names for its temporary folders";
  if (name.size() > 200) return "is longer than 200 bytes";
  return "";
}

void checkPlainName(const std::string& name, const char* what) {
  if (name.empty()) fail(ErrorCode::kInvalidArgument, "{} is empty: it names the output folder and its files", what);
  if (std::string why = whyNotPlainName(name); !why.empty())
    fail(ErrorCode::kInvalidArgument, "{} '{}' {} (it must be one plain name; the folder it goes into is given apart, e.g. "
         "with --out)", what, name, why);
}

void makeFolder(const fs::path& dir, const char* what) {
  std::error_code ec;
  auto st = fs::status(dir, ec);
  if (fs::is_directory(st)) return;
  if (fs::exists(st)) fail(ErrorCode::kIo, "{} {}: exists and is not a folder", what, dir.string());
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    fail(ErrorCode::kIo, "{} {}: cannot create the folder: {}", what, dir.string(), ec ? ec.message() : "not a folder after creation");
}

namespace {

constexpr const char* kMarkerHeader = "npuc output folder: a later npuc run may replace this folder with a new one. It lists "
                                      "what npuc wrote here; anything else in the folder stops that replacement.\n";

/// What a folder holds below it, as marker lines: "d <path>" for a folder, "f <size> <path>" for anything else,
/// sorted; the marker itself left out. Symbolic links are not followed (a link is an entry of its own).
std::vector<std::string> folderEntries(const fs::path& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (rel == OutputDir::kMarker) continue;
    const auto st = it->symlink_status(ec);
    if (fs::is_directory(st)) lines.push_back("d " + rel);
    else lines.push_back(fmt::format("f {} {}", fs::is_regular_file(st) ? it->file_size(ec) : 0, rel));
  }
  if (ec) fail(ErrorCode::kIo, "{}: cannot list the folder: {}", dir.string(), ec.message());
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string entryPath(const std::string& line) {
  if (line.rfind("d ", 0) == 0) return line.substr(2);
  const size_t sp = line.find(' ', 2);
  return sp == std::string::npos ? line : line.substr(sp + 1);
}

/// The marker of a folder npuc publishes: the header, the SHA-256 of the entry lines, the entry lines.
std::string markerText(const std::vector<std::string>& entries) {
  std::string body;
  for (const std::string& e : entries) (body += e) += '\n';
  return std::string(kMarkerHeader) + "sha256 " + sha256Hex(body.data(), body.size()) + "\n" + body;
}

}  // namespace

std::string OutputDir::whyNotReplaceable(const fs::path& dir) {
  std::error_code ec;
  auto st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return "";
  if (fs::is_symlink(st)) return "is a symbolic link (npuc replaces only a folder it wrote; remove the link or choose another name)";
  if (!fs::is_directory(st)) return "exists and is not a folder (npuc replaces only a folder it wrote)";
  if (fs::is_empty(dir, ec) && !ec) return "";
  const fs::path marker = dir / kMarker;
  if (!fs::is_regular_file(fs::symlink_status(marker, ec)))
    return "exists and holds files npuc did not write (no npuc marker in it): npuc does not replace it; remove it "
           "yourself or choose another PREFIX or --out";
  // The marker lists what npuc wrote (checked by its own SHA-256: a marker file copied or edited by hand is not
  // npuc's); a folder holding anything else holds the user's files, which npuc never deletes.
  std::set<std::string> ours;
  try {
    std::istringstream in(readFileText(marker, 64u << 20, "an npuc output marker"));
    std::string header, sum, line, body;
    std::getline(in, header);
    std::getline(in, sum);
    while (std::getline(in, line)) {
      (body += line) += '\n';
      ours.insert(entryPath(line));
    }
    if (header == "npuc output folder: a later npuc run may replace this folder with a new one.")
      return "holds the marker of an earlier npuc version, which did not list the files npuc wrote: npuc cannot tell yours "
             "from its own and does not replace it; remove the folder yourself once (or choose another PREFIX or --out)";
    if (header + "\n" != kMarkerHeader || sum != "sha256 " + sha256Hex(body.data(), body.size()))
      return "holds a " + std::string(kMarker) + " file that is not npuc's (unreadable or edited): npuc does not replace the "
             "folder; remove it yourself or choose another PREFIX or --out";
  } catch (const Error& e) {
    return std::string("its ") + kMarker + " cannot be read (" + e.what() + "): npuc does not replace the folder";
  }
  std::vector<std::string> theirs;
  for (const std::string& e : folderEntries(dir))
    if (!ours.count(entryPath(e))) theirs.push_back(entryPath(e));
  if (theirs.empty()) return "";
  std::sort(theirs.begin(), theirs.end());
  std::string names;
  for (size_t i = 0; i < theirs.size() && i < 8; ++i) names += (i ? ", " : "") + theirs[i];
  if (theirs.size() > 8) names += fmt::format(" and {} more", theirs.size() - 8);
  return fmt::format("is an npuc output folder that also holds files npuc did not write ({}): npuc does not replace it "
                     "and lose them; move them out of the folder, or choose another PREFIX or --out", names);
}

OutputDir::OutputDir(fs::path root, std::string name, const char* what) : root_(std::move(root)), name_(std::move(name)) {
  checkPlainName(name_, what);
  if (root_.empty()) root_ = ".";
  try {
    // `root` made one component at a time, each folder this run made recorded (deepest first), so that a run that
    // fails removes them again when they are still empty — and never a folder that was there before (a path
    // through "..", a symbolic link, a folder another run made at the same moment).
    fs::path p;
    for (const fs::path& part : root_) {
      p /= part;
      std::error_code ec;
      if (fs::create_directory(p, ec) && !ec) created_.insert(created_.begin(), p);
    }
    makeFolder(root_, "output folder");  // (what could not be made: its error)
    open();
  } catch (...) {
    std::error_code ec;
    for (const fs::path& p : created_) fs::remove(p, ec);
    throw;
  }
}

void OutputDir::open() {
  final_ = root_ / name_;
  if (std::string why = whyNotReplaceable(final_); !why.empty()) fail(ErrorCode::kIo, "{}: {}", final_.string(), why);
  // Temporary folders of earlier runs that died (their process is gone) are removed.
  const std::string mine = "." + name_ + ".";
  std::error_code ec;
  for (auto it = fs::directory_iterator(root_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string f = it->path().filename().string();
    if (f.compare(0, mine.size(), mine) != 0) continue;
    std::string rest = f.substr(mine.size());  // "<tag>-<pid>-<n>"
    size_t dash = rest.find('-');
    if (dash == std::string::npos) continue;
    std::string tag = rest.substr(0, dash);
    if (tag != "tmp" && tag != "old") continue;
    long pid = std::strtol(rest.c_str() + dash + 1, nullptr, 10);
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
  tmp_ = uniqueSibling(final_, "tmp");
  if (!fs::create_directory(tmp_, ec) || ec)
    fail(ErrorCode::kIo, "{}: cannot create a temporary folder in {}: {}", final_.string(), root_.string(),
         ec ? ec.message() : "it exists");
}

OutputDir::~OutputDir() {
  if (committed_) return;
  std::error_code ec;
  if (!tmp_.empty()) fs::remove_all(tmp_, ec);
  for (const fs::path& p : created_) fs::remove(p, ec);  // (only an empty folder goes)
}

void OutputDir::commit() {
  writeFileAtomic(tmp_ / kMarker, markerText(folderEntries(tmp_)));
  syncTree(tmp_);
  // Retried when a concurrent run publishes between our look at the final folder and our rename.
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (std::string why = whyNotReplaceable(final_); !why.empty()) fail(ErrorCode::kIo, "{}: {}", final_.string(), why);
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(final_, ec))) {
      // Nothing there: a plain rename; it fails if a concurrent run got there first (then we swap).
      if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_NOREPLACE) == 0) {
        committed_ = true;
        syncPath(root_, true);
        return;
      }
      if (errno == EEXIST || errno == ENOTEMPTY) continue;
      if (errno != EINVAL && errno != ENOSYS)
        fail(ErrorCode::kIo, "{}: cannot move the output into place: {}", final_.string(), std::strerror(errno));
    }
    // An earlier output is there: swap the two folders in one step, then remove the old one.
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
      committed_ = true;
      fs::path old = uniqueSibling(final_, "old");
      // tmp_ now holds the previous output; rename it (a dead run's leftovers are recognised by name) and remove it.
      if (::rename(tmp_.c_str(), old.c_str()) != 0) old = tmp_;
      syncPath(root_, true);
      fs::remove_all(old, ec);
      return;
    }
    if (errno == ENOENT) continue;  // a concurrent run moved it away in between
    if (errno != EINVAL && errno != ENOSYS)
      fail(ErrorCode::kIo, "{}: cannot swap the new output into place: {}", final_.string(), std::strerror(errno));
    // A file system without RENAME_EXCHANGE: move the old folder aside, the new one in, then remove the old one.
    fs::path old = uniqueSibling(final_, "old");
    if (::rename(final_.c_str(), old.c_str()) != 0 && errno != ENOENT)
      fail(ErrorCode::kIo, "{}: cannot move the previous output aside: {}", final_.string(), std::strerror(errno));
    if (::rename(tmp_.c_str(), final_.c_str()) != 0) {
      int err = errno;
      ::rename(old.c_str(), final_.c_str());  // put the old one back
      if (err == EEXIST || err == ENOTEMPTY) continue;
      fail(ErrorCode::kIo, "{}: cannot move the output into place: {}", final_.string(), std::strerror(err));
    }
    committed_ = true;
    syncPath(root_, true);
    fs::remove_all(old, ec);
    return;
  }
  fail(ErrorCode::kIo, "{}: other runs kept replacing this folder; gave up after 64 attempts", final_.string());
}

}  // namespace npuc
