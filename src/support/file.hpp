// File helpers: whole-file reads with clear errors and size limits, durable atomic writes (temp file, fsync,
// rename), and output folders that are built beside their final place and published atomically, so that a failed
// or killed run never leaves a half-written output behind and never removes what npuc did not write.
#pragma once

#include "npuc/io.hpp"  // readFileBytes, readFileText, readFilePrefix

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace npuc {

/// Writes to a temporary file beside `path`, flushes it to disk (fsync) and renames it over `path`.
void writeFileAtomic(const std::filesystem::path& path, const void* data, size_t size);
inline void writeFileAtomic(const std::filesystem::path& path, const std::string& s) {
  writeFileAtomic(path, s.data(), s.size());
}

/// A name for a temporary file or folder beside `path` that no other thread or process uses:
/// "<dir>/.<name>.<tag>-<pid>-<counter>".
std::filesystem::path uniqueSibling(const std::filesystem::path& path, const char* tag);

/// Flushes one file to disk (fsync).
void syncFile(const std::filesystem::path& path);
/// Flushes every regular file and folder under `dir` (and `dir` itself) to disk.
void syncTree(const std::filesystem::path& dir);

/// Checks that `name` names one entry inside a folder and nothing else: not empty, not "." or "..", no '/' or
/// '\', no control characters, not starting with '.' (npuc's temporary folders do), at most 200 bytes.
/// whyNotPlainName returns the rule it breaks ("" when none); checkPlainName throws kInvalidArgument:
/// "<what> '<name>' <rule>".
std::string whyNotPlainName(const std::string& name);
void checkPlainName(const std::string& name, const char* what);

/// Creates `dir` and its parents; a path that exists but is not a folder, or cannot be created (a regular file
/// on the way, /proc, no permission), is a user error (kIo) naming the path and the reason.
void makeFolder(const std::filesystem::path& dir, const char* what);

/// An output folder <root>/<name> that is built in a temporary folder beside it and published by commit():
///  - the constructor checks `name` (checkPlainName), creates `root`, refuses up front to replace anything at
///    <root>/<name> that npuc did not write (see replaceable()), removes the temporary folders of earlier runs
///    that died, and creates a fresh temporary folder (path());
///  - commit() flushes every file to disk and swaps the new folder in atomically: at every instant <root>/<name> is
///    the old folder or the new one, never neither; concurrent runs to the same name each publish a complete
///    folder (the last one wins);
///  - an OutputDir destroyed without commit() removes its temporary folder, and the folders of `root` it created
///    when they are still empty.
/// Every folder it publishes holds the marker file kMarker, which is what lets a later run replace it.
class OutputDir {
 public:
  static constexpr const char* kMarker = ".npuc-output";

  OutputDir(std::filesystem::path root, std::string name, const char* what = "PREFIX");
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  ~OutputDir();

  const std::filesystem::path& path() const { return tmp_; }
  const std::filesystem::path& finalPath() const { return final_; }
  void commit();

  /// Why `dir` may not be replaced by npuc, or "" when it may: it does not exist, or it is an empty folder, or a
  /// folder npuc published holding nothing but what npuc wrote there. The marker kMarker lists every file and folder
  /// npuc wrote (with a SHA-256 over the list: a marker copied or edited by hand is not npuc's); anything else in
  /// the folder is the user's, and the message names it — npuc never deletes it. A symbolic link, a file, a folder
  /// without a valid marker (a package folder of an npuc from before the marker included) is refused.
  static std::string whyNotReplaceable(const std::filesystem::path& dir);

 private:
  void open();  // the constructor's work after `root` exists

  std::filesystem::path root_, final_, tmp_;
  std::vector<std::filesystem::path> created_;  // the folders of root_ this created, deepest first
  std::string name_;
  bool committed_ = false;
};

}  // namespace npuc
