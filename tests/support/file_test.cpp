// Tests of the file helpers: bounded reads, plain output names, and output folders published atomically that
// never replace what npuc did not write (the data-loss findings of the bad-input campaign).
#include "support/error.hpp"
#include "support/file.hpp"

#include "scratch_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

void writeText(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

std::string readText(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> s;
  for (auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

ErrorCode codeOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error";
  return ErrorCode::kInternal;
}

}  // namespace

TEST(PlainName, OnlyOneFileNameComponentPasses) {
  for (const char* ok : {"net", "yolo_v5-s", "a.b", "ünï"}) EXPECT_NO_THROW(checkPlainName(ok, "PREFIX")) << ok;
  for (std::string badname : {std::string(""), std::string("."), std::string(".."), std::string("a/b"), std::string("../x"),
                              std::string("a\\b"), std::string(".hidden"), std::string("a\nb"), std::string(201, 'x')}) {
    try {
      checkPlainName(badname, "PREFIX");
      ADD_FAILURE() << "accepted '" << badname << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("PREFIX"), std::string::npos) << e.what();
    }
  }
}

TEST(ReadFile, RefusesAFileOverItsLimitBeforeReadingIt) {
  fs::path d = test::scratchDir("r");
  // A sparse file of 1 GiB: refused from its size alone (reading it would take seconds and a GiB of memory).
  fs::path big = d / "big.bin";
  { std::ofstream f(big, std::ios::binary); }
  fs::resize_file(big, uint64_t(1) << 30);
  try {
    readFileBytes(big, 1000, "a test file");
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("1073741824 bytes, more than the 1000 bytes a test file allows"), std::string::npos) << e.what();
  }
  EXPECT_EQ(codeOf([&] { readFileBytes(d); }), ErrorCode::kIo);                 // a folder
  EXPECT_EQ(codeOf([&] { readFileBytes(d / "none"); }), ErrorCode::kIo);        // missing
  EXPECT_EQ(codeOf([&] { readFileBytes("/dev/zero"); }), ErrorCode::kIo);       // not a regular file
}

// Issue 46.5: a FIFO is refused at once (opening it for reading used to wait for a writer: forever), naming it.
TEST(ReadFile, RefusesAFifoWithoutWaitingForAWriter) {
  fs::path d = test::scratchDir("fifo");
  const fs::path fifo = d / "manifest.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    readFileBytes(fifo);
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("manifest.json: is not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(OutputDir, RefusesToReplaceWhatNpucDidNotWrite) {
  fs::path root = test::scratchDir("out");
  fs::create_directories(root / "thesis");
  writeText(root / "thesis" / "chapter1.tex", "precious");
  writeText(root / "thesis" / "manifest.json", "{\"format\": \"something-else\"}");
  writeText(root / "afile", "x");
  fs::create_symlink(root / "thesis", root / "link");
  for (const char* name : {"thesis", "afile", "link"}) {
    try {
      OutputDir out(root, name);
      ADD_FAILURE() << "accepted " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(readText(root / "thesis" / "chapter1.tex"), "precious");
  EXPECT_EQ(readText(root / "afile"), "x");
  EXPECT_EQ(listing(root), (std::set<std::string>{"thesis", "afile", "link"}));  // no temporary folder left
  // The root itself must be a folder (or creatable).
  EXPECT_EQ(codeOf([&] { OutputDir out(root / "afile", "p"); }), ErrorCode::kIo);
  EXPECT_EQ(codeOf([&] { OutputDir out("/proc/npuc-test", "p"); }), ErrorCode::kIo);
  EXPECT_EQ(codeOf([&] { OutputDir out(root, ".."); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(codeOf([&] { OutputDir out(root, ""); }), ErrorCode::kInvalidArgument);
}

TEST(OutputDir, ReplacesItsOwnOutputs) {
  fs::path root = test::scratchDir("out");
  fs::create_directories(root / "empty");
  for (const char* name : {"empty", "new"}) {
    for (int gen = 0; gen < 2; ++gen) {
      OutputDir out(root, name);
      writeText(out.path() / fmt::format("gen{}.txt", gen), "data");
      fs::create_directories(out.path() / "sub");
      writeText(out.path() / "sub" / "x.bin", "xx");
      out.commit();
      EXPECT_EQ(listing(root / name), (std::set<std::string>{fmt::format("gen{}.txt", gen), "sub", OutputDir::kMarker})) << name;
    }
  }
  EXPECT_EQ(listing(root), (std::set<std::string>{"empty", "new"}));
}

// Issue 46.1: a folder is npuc's only by a marker npuc wrote (its list of what npuc wrote, under a SHA-256), not by a
// manifest.json that mentions "npuc-package" (any folder holding one was replaced, its other files deleted); and a
// file the user added to npuc's own folder stops the replacement, named in the message — it was deleted.
TEST(OutputDir, NeverDeletesTheUsersFiles) {
  fs::path root = test::scratchDir("out");
  fs::create_directories(root / "looks_like_a_package");
  writeText(root / "looks_like_a_package" / "manifest.json", "{\n \"files\": [],\n \"format\": \"npuc-package\"\n}\n");
  writeText(root / "looks_like_a_package" / "thesis.tex", "precious");
  {
    OutputDir out(root, "pkg");
    writeText(out.path() / "manifest.json", "{}");
    out.commit();
  }
  writeText(root / "pkg" / "NOTES.md", "mine");
  fs::create_directories(root / "pkg" / "copies");
  writeText(root / "pkg" / "copies" / "model.onnx", "mine too");
  // A marker copied into another folder, or edited, is not npuc's.
  fs::create_directories(root / "forged");
  fs::copy_file(root / "pkg" / OutputDir::kMarker, root / "forged" / OutputDir::kMarker);
  writeText(root / "forged" / "manifest.json", "{}");
  writeText(root / "forged" / "paper.pdf", "precious");
  fs::create_directories(root / "edited");
  writeText(root / "edited" / OutputDir::kMarker, readText(root / "pkg" / OutputDir::kMarker) + "f 8 paper.pdf\n");
  writeText(root / "edited" / "paper.pdf", "precious");
  for (const char* name : {"looks_like_a_package", "pkg", "forged", "edited"}) {
    try {
      OutputDir out(root, name);
      ADD_FAILURE() << "accepted " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      if (std::string(name) == "pkg") {
        EXPECT_NE(std::string(e.what()).find("also holds files npuc did not write (NOTES.md, copies, copies/model.onnx)"),
                  std::string::npos) << e.what();
      }
    }
  }
  EXPECT_EQ(readText(root / "looks_like_a_package" / "thesis.tex"), "precious");
  EXPECT_EQ(readText(root / "pkg" / "NOTES.md"), "mine");
  EXPECT_EQ(readText(root / "pkg" / "copies" / "model.onnx"), "mine too");
  EXPECT_EQ(readText(root / "forged" / "paper.pdf"), "precious");
  EXPECT_EQ(readText(root / "edited" / "paper.pdf"), "precious");
  // Moved out, the folder is npuc's again.
  fs::remove(root / "pkg" / "NOTES.md");
  fs::remove_all(root / "pkg" / "copies");
  OutputDir again(root, "pkg");
  writeText(again.path() / "manifest.json", "{\"v\": 2}");
  again.commit();
  EXPECT_EQ(readText(root / "pkg" / "manifest.json"), "{\"v\": 2}");
}

TEST(OutputDir, AFailedRunLeavesThePreviousOutputAndNoTemporaryFolder) {
  fs::path root = test::scratchDir("out");
  {
    OutputDir out(root, "p");
    writeText(out.path() / "a.txt", "first");
    out.commit();
  }
  {
    OutputDir out(root, "p");
    writeText(out.path() / "a.txt", "second");
    // destroyed without commit (an exception in the stages)
  }
  EXPECT_EQ(readText(root / "p" / "a.txt"), "first");
  EXPECT_EQ(listing(root), (std::set<std::string>{"p"}));
}

TEST(OutputDir, RemovesTheTemporaryFoldersOfRunsThatDied) {
  fs::path root = test::scratchDir("out");
  // pid_max is at most 2^22 on Linux: these pids do not exist.
  for (const char* dead : {".p.tmp-2147483000-0", ".p.old-2147483001-3"}) {
    fs::create_directories(root / dead);
    writeText(root / dead / "x", "half-written");
  }
  std::string alive = fmt::format(".p.tmp-{}-0", ::getppid());  // a live process: its run may be in progress
  std::string other = ".q.tmp-2147483000-0";                      // another PREFIX: not ours to clean
  fs::create_directories(root / alive);
  fs::create_directories(root / other);
  OutputDir out(root, "p");
  out.commit();
  EXPECT_EQ(listing(root), (std::set<std::string>{"p", alive, other}));
}

TEST(OutputDir, ConcurrentRunsToOneNameEachPublishACompleteFolder) {
  fs::path root = test::scratchDir("out");
  std::vector<std::thread> th;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    th.emplace_back([&, t] {
      try {
        for (int k = 0; k < 5; ++k) {
          OutputDir out(root, "p");
          for (int f = 0; f < 10; ++f) writeText(out.path() / fmt::format("f{}", f), fmt::format("{}-{}", t, k));
          out.commit();
        }
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& x : th) x.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(listing(root), (std::set<std::string>{"p"}));
  std::string gen = readText(root / "p" / "f0");
  for (int f = 0; f < 10; ++f) EXPECT_EQ(readText(root / "p" / fmt::format("f{}", f)), gen);  // one run's files, all of them
}

TEST(OutputDir, AKilledRunNeverLeavesTheFolderMissingOrPartial) {
  fs::path root = test::scratchDir("out");
  {
    OutputDir out(root, "p");
    for (int f = 0; f < 40; ++f) writeText(out.path() / fmt::format("f{}", f), "0");
    out.commit();
  }
  const size_t want = 41;  // 40 files and the marker
  for (int round = 0; round < 5; ++round) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // republishes the folder as fast as it can until killed
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // (and dies with the test, should it stop on a failed assertion)
      try {
        for (;;) {
          OutputDir out(root, "p");
          for (int f = 0; f < 40; ++f) writeText(out.path() / fmt::format("f{}", f), "1");
          out.commit();
        }
      } catch (...) {
      }
      ::_exit(1);
    }
    struct Reap {  // a failed ASSERT returns early: the child is killed all the same, so that ctest is not left waiting
      pid_t pid;
      ~Reap() {
        if (pid > 0) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
      }
    } reap{child};
    for (int look = 0; look < 200; ++look) {
      std::error_code ec;
      size_t n = 0;
      for (auto it = fs::directory_iterator(root / "p", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) ++n;
      ASSERT_FALSE(ec) << "the folder was missing: " << ec.message();
      ASSERT_EQ(n, want) << "a partial folder was visible";
    }
    ::usleep(static_cast<useconds_t>(1000 * (round + 1)));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    reap.pid = 0;
    EXPECT_EQ(listing(root / "p").size(), want);
  }
  OutputDir next(root, "p");  // cleans what the killed runs left
  next.commit();
  EXPECT_EQ(listing(root), (std::set<std::string>{"p"}));
}
