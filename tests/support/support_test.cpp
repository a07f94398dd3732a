// Tests of the support library: fp16/bf16 conversions, .npy I/O, tensors, the thread pool.
#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/npy.hpp"
#include "support/sha256.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace npuc;

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    EXPECT_EQ(floatToHalf(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1.0)
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // halfway to zero: even
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
}

TEST(Fp16, Bfloat16) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

TEST(Npy, RoundTrip) {
  Tensor t(DType::kF32, {2, 3});
  for (int i = 0; i < 6; ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5f;
  std::string bytes = encodeNpy(t);
  Tensor u = parseNpy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.npy");
  EXPECT_TRUE(t.sameBits(u));
  Tensor s = Tensor::scalar<int64_t>(7);
  bytes = encodeNpy(s);
  EXPECT_TRUE(s.sameBits(parseNpy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "s.npy")));
}

TEST(Npy, MalformedFilesGiveClearErrors) {
  Tensor t(DType::kI32, {4});
  std::string bytes = encodeNpy(t);
  auto parse = [](const std::string& b) { return parseNpy(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "bad.npy"); };
  try {
    parse(bytes.substr(0, bytes.size() - 3));
    FAIL() << "truncated data accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos);
  }
  EXPECT_THROW(parse("not numpy at all"), Error);
  std::string big = bytes;
  big[8] = '\xff';
  big[9] = '\xff';
  EXPECT_THROW(parse(big), Error);
  EXPECT_THROW(parse(std::string()), Error);
}

// .npy files as numpy writes them, and each malformed variant the bad-input campaign found accepted (issue 22).
TEST(Npy, HeadersAreReadStrictly) {
  // A v1.0 file with the given header dict and `data_bytes` zero bytes of data.
  auto npy = [](std::string dict, size_t data_bytes) {
    std::string h = dict;
    h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
    std::string b = "\x93NUMPY\x01";
    b += '\0';
    b += static_cast<char>(h.size() & 0xff);
    b += static_cast<char>(h.size() >> 8);
    return b + h + std::string(data_bytes, '\0');
  };
  auto parse = [](const std::string& b) { return parseNpy(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "x.npy"); };
  auto refused = [&](const std::string& b, const std::string& fragment) {
    try {
      parse(b);
      ADD_FAILURE() << "accepted: " << b.substr(10, 80);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(e.code(), ErrorCode::kInternal);
    }
  };
  // What numpy writes (including a trailing comma, a 1-tuple, Fortran order of a 1-D array, double quotes).
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24)).shape(), (Shape{2, 3}));
  EXPECT_EQ(parse(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (64,), }", 256)).shape(), (Shape{64}));
  EXPECT_EQ(parse(npy("{\"descr\": \"|u1\", \"shape\": (), \"fortran_order\": False}", 1)).shape(), (Shape{}));
  // Each of these was read before.
  refused(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24), "Fortran-order");
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", 24), "expected");        // no closing brace
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} junk", 24), "after the header dict");
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 28), "extra bytes after the array");
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(99, '9') + ",)}", 4), "too large");
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 4), "far less than");
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 4), "non-negative integer");
  refused(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", 4), "True or False");
  refused(npy("{'descr': '<f4', 'shape': (1,)}", 4), "no 'fortran_order' field");
  refused(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4), "appears twice");
  refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 4), "unknown key 'extra'");
}

TEST(Tensor, ShapeChecks) {
  EXPECT_EQ(shapeNumel({2, 3, 4}), 24);
  EXPECT_EQ(shapeNumel({}), 1);
  EXPECT_THROW(shapeNumel({-1, 3}), Error);
  EXPECT_THROW(shapeNumel({1 << 30, 1 << 30}), Error);
  Tensor t(DType::kF32, {2, 3});
  EXPECT_EQ(t.reshaped({3, 2}).raw(), t.raw());
  EXPECT_THROW(t.reshaped({4}), Error);
  EXPECT_THROW(t.data<int32_t>(), Error);
}

TEST(Buffer, RecyclesTheMostRecentlyFreedBlockThatFits) {
  constexpr size_t kB = size_t{1} << 20;  // well above the smallest cached size
  const size_t old_limit = Buffer::setCacheLimit(0);  // start from an empty cache
  Buffer::setCacheLimit(old_limit);
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  uint8_t* big = nullptr;
  {
    auto ba = Buffer::allocateUninitialized(kB);
    auto bb = Buffer::allocateUninitialized(kB + 4096);
    auto bbig = Buffer::allocateUninitialized(4 * kB);
    a = ba->data(), b = bb->data(), big = bbig->data();
    bbig.reset();
    ba.reset();
    bb.reset();  // freed last
  }
  // Both small blocks fit a kB request; the one freed last wins, even though it is the larger.
  auto r1 = Buffer::allocateUninitialized(kB);
  EXPECT_EQ(r1->data(), b);
  EXPECT_EQ(r1->size(), kB);
  auto r2 = Buffer::allocateUninitialized(kB);
  EXPECT_EQ(r2->data(), a);
  // The 4 kB block is more than twice the request: a fresh block instead, and the big one stays cached.
  auto r3 = Buffer::allocateUninitialized(kB);
  EXPECT_NE(r3->data(), big);
  auto r4 = Buffer::allocateUninitialized(3 * kB);
  EXPECT_EQ(r4->data(), big);
  // Zeroed allocations from a recycled block are zero.
  r4.reset();
  auto z = Buffer::allocate(3 * kB);
  ASSERT_EQ(z->data(), big);
  for (size_t i = 0; i < 3 * kB; i += 4093) ASSERT_EQ(z->data()[i], 0) << i;
  Buffer::setCacheLimit(0);
  Buffer::setCacheLimit(old_limit);
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallelFor(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      }, 3);
      for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
  }
}

// Each thread runs its own range of chunks first and then takes the others' leftovers: with one thread held up (the
// caller's first chunk, or a worker's), the others take its range, and still every chunk runs once, with the bounds
// the grain gives.
TEST(ThreadPool, ChunksLeftByALateThreadAreTakenOnce) {
  for (int threads : {2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t grain : {1, 3, 5}) {
      for (int64_t n : {1, 2, 5, 17, 64, 1001}) {
        for (int64_t slow_chunk : {int64_t{0}, (n - 1) / grain}) {
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          std::atomic<bool> bad_bounds{false};
          pool.parallelFor(n, [&](int64_t b, int64_t e) {
            if (b % grain != 0 || e != std::min(n, b + grain)) bad_bounds = true;
            if (b / grain == slow_chunk) std::this_thread::sleep_for(std::chrono::milliseconds(2));
            for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
          }, grain);
          EXPECT_FALSE(bad_bounds.load()) << threads << " threads, grain " << grain << ", n " << n;
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " threads, grain " << grain << ", n " << n
                                                               << ", index " << i;
        }
      }
    }
  }
}

// ---- The pool when threads cannot start, and after fork (issue 46.4). Each runs where a hang is a failure: in a
// forked child that SIGALRM ends. ----

namespace {

/// Runs `f` in a forked child that dies of SIGALRM after `seconds`; true when it returned true within them.
bool inChildWithin(int seconds, const std::function<bool()>& f) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(static_cast<unsigned>(seconds));
    bool ok = false;
    try {
      ok = f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " (SIGALRM = " << SIGALRM << ": it hung; SIGABRT = " << SIGABRT << ")";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int threadsOfThisProcess() {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
  return n;
}

/// parallelFor over [0, n) hits every index once.
bool coversOnce(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  pool.parallelFor(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
  }, 7);
  for (auto& h : hits)
    if (h.load() != 1) return false;
  return true;
}

}  // namespace

TEST(ThreadPool, AWorkerThatCannotStartIsAnErrorAndTheStartedOnesAreJoined) {
  EXPECT_TRUE(inChildWithin(20, [] {
    const int before = threadsOfThisProcess();
    detail::failThreadStartAfter(3);
    try {
      ThreadPool pool(8);
      std::fprintf(stderr, "no error\n");
      return false;
    } catch (const Error& e) {
      const std::string m = e.what();
      if (e.code() != ErrorCode::kIo || m.find("8 threads asked for") == std::string::npos ||
          m.find("started 3 workers") == std::string::npos) {
        std::fprintf(stderr, "message: %s\n", m.c_str());
        return false;
      }
    }
    if (threadsOfThisProcess() != before) {
      std::fprintf(stderr, "%d threads before, %d after\n", before, threadsOfThisProcess());
      return false;
    }
    ThreadPool again(4);  // (the failure was one start: the next pool starts)
    return coversOnce(again, 1000);
  }));
}

TEST(ThreadPool, ThreadsTheSystemRefusesAreAnErrorNotAHang) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve address space beyond any small RLIMIT_AS";
#else
  EXPECT_TRUE(inChildWithin(20, [] {
    // Address space for a few 8 MiB thread stacks beyond what the process maps now: the system refuses the rest.
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (48u << 20);
    const rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) return false;
    try {
      ThreadPool pool(ThreadPool::kMaxThreads);
      std::fprintf(stderr, "no error\n");
      return false;
    } catch (const Error& e) {
      const std::string m = e.what();
      const bool ok = e.code() == ErrorCode::kIo && m.find("256 threads asked for") != std::string::npos;
      if (!ok) std::fprintf(stderr, "message: %s\n", m.c_str());
      return ok && threadsOfThisProcess() == 1;
    }
  }));
#endif
}

TEST(ThreadPool, MoreThreadsThanTheMaximumAreRefused) {
  for (int n : {ThreadPool::kMaxThreads + 1, 1000, 5000}) {
    try {
      ThreadPool pool(n);
      ADD_FAILURE() << n << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("threads must be 1 to 256 (got " + std::to_string(n) + ")"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(ThreadPool::shared(n), Error);
  }
  ThreadPool most(ThreadPool::kMaxThreads);
  EXPECT_EQ(most.size(), ThreadPool::kMaxThreads);
}

TEST(ThreadPool, AForkedChildRunsMultiThreadedAfterItsParentDid) {
  ThreadPool own(4);
  ASSERT_TRUE(coversOnce(own, 1000));
  ASSERT_TRUE(coversOnce(ThreadPool::shared(3), 1000));
  EXPECT_TRUE(inChildWithin(10, [&] {
    bool ok = coversOnce(own, 1000) && coversOnce(ThreadPool::shared(3), 1000) && coversOnce(ThreadPool::shared(2), 100);
    // The child's pools have workers of their own: 1 (this thread) + 3 + 2 + 1.
    const int n = threadsOfThisProcess();
    if (n != 7) std::fprintf(stderr, "%d threads in the child\n", n);
    return ok && n == 7 && coversOnce(own, 5000);
  }));
  EXPECT_TRUE(coversOnce(own, 1000));  // (the parent's pool is untouched)
}

TEST(ThreadPool, ForkWhileAnotherThreadRunsThePool) {
  ThreadPool pool(3);
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread busy([&] {
    while (!stop.load()) {
      if (!coversOnce(pool, 2000)) ADD_FAILURE() << "parent round";
      rounds++;
    }
  });
  for (int k = 0; k < 5; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(inChildWithin(10, [&] { return coversOnce(pool, 2000) && coversOnce(pool, 3); })) << "fork " << k;
  }
  stop.store(true);
  busy.join();
  EXPECT_GT(rounds.load(), 0);
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256Hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  // FIPS 180-2, two blocks
  EXPECT_EQ(sha256Hex(two, std::strlen(two)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256Hex(million.data(), million.size()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, EveryPathTheCpuHasGivesTheSameState) {
  std::vector<uint8_t> data(64 * 37);
  uint32_t x = 12345;
  for (auto& b : data) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  if (!detail::cpuHasShaNi()) GTEST_SKIP() << "this CPU has no SHA extensions (the portable path is the one in use)";
  for (size_t n : {size_t{1}, size_t{2}, size_t{37}}) {
    uint32_t a[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint32_t b[8];
    std::memcpy(b, a, sizeof a);
    detail::sha256BlocksPortable(a, data.data(), n);
    detail::sha256BlocksShaNi(b, data.data(), n);
    EXPECT_EQ(0, std::memcmp(a, b, sizeof a)) << n << " blocks";
  }
}
